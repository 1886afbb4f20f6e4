import assert from 'node:assert/strict';
import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { sql } from 'slonik';
import { z } from 'zod';
import { importContent, parseContentFile } from '../../src/content/importContent.js';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines, type TestEnv } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { bulkFixture, makeReadings } from '../helpers/readings.js';

type Raw = { status: number; headers: http.IncomingHttpHeaders; body: Buffer; firstChunkAt: number; endAt: number };

/** A request with exactly these headers (fetch would add Accept-Encoding and decode), every byte kept as sent. */
function raw(env: TestEnv, target: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.request(`${env.origin}${target}`, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      let firstChunkAt = -1;
      response.on('data', (chunk: Buffer) => {
        if (firstChunkAt < 0) firstChunkAt = performance.now() - started;
        chunks.push(chunk);
      });
      response.on('end', () =>
        resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks), firstChunkAt, endAt: performance.now() - started }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end();
  });
}

const demo = JSON.parse(readFileSync(path.resolve('src/content/demoContent.json'), 'utf8'));

describeEngines('HTTP caching and compression', (env) => {
  let key = '';
  before(async () => {
    await importContent(env().db.pool, parseContentFile(demo));
    key = await stationWithKey(env(), 'cache-01');
    // Enough stations for a station list worth compressing.
    for (let i = 2; i <= 12; i++) await stationWithKey(env(), `cache-${String(i).padStart(2, '0')}`);
    await storeReadings(env().db, 'cache-01', makeReadings(3 * 1440, '2026-03-01T00:00:00Z', 1, 5));
    // And a recent day, for the last hours' history.
    await storeReadings(env().db, 'cache-01', makeReadings(1440, new Date(Math.floor(Date.now() / 60_000) * 60_000 - 1441 * 60_000).toISOString(), 1, 6));
  });

  const cacheable: [string, string][] = [
    ['/api/v1/', 'public, max-age=3600'],
    ['/api/v1/openapi.json', 'public, max-age=3600'],
    ['/api/v1/changelog/', 'public, max-age=3600'],
    ['/api/v1/docs/', 'public, max-age=3600'],
    ['/api/v1/docs/assets/swagger-ui-bundle.js', 'public, max-age=86400'],
    ['/api/v1/stations/', 'public, max-age=30'],
    ['/api/v1/stations/?output=geojson', 'public, max-age=30'],
    ['/api/v1/notes/', 'public, max-age=300'],
    ['/api/v1/notes/?output=geojson', 'public, max-age=300'],
    ['/api/v1/publications/1/', 'public, max-age=300'],
    ['/publications/1/cite.ris', 'public, max-age=300'],
    ['/api/v1/team/', 'public, max-age=300'],
    ['/api/v1/research/', 'public, max-age=300'],
    ['/api/v1/education/', 'public, max-age=300'],
    ['/api/v1/activity/', 'public, max-age=300'],
    ['/api/v1/search/?q=soil', 'public, max-age=300'],
    ['/api/v1/data/latest/?station=cache-01', 'no-cache'],
    ['/api/v1/data/compare/?stations=cache-01', 'no-cache'],
    ['/api/v1/data/aggregate/?station=cache-01', 'no-cache'],
    ['/api/v1/data/aggregate/?station=cache-01&to_date=2026-03-02', 'public, max-age=300'],
    ['/api/v1/data/aggregate/?station=cache-01&period=hour&to_date=2026-03-03&output=csv', 'public, max-age=300'],
  ];

  it('tags every buffered answer with a strong ETag and its Cache-Control, and answers 304 when the tag is current', async () => {
    for (const [target, cacheControl] of cacheable) {
      const first = await raw(env(), target);
      assert.equal(first.status, 200, target);
      assert.equal(first.headers['cache-control'], cacheControl, target);
      const etag = first.headers.etag!;
      assert.match(etag ?? '', /^"[A-Za-z0-9_-]+"$/, `${target}: a strong tag, ${etag}`);
      const again = await raw(env(), target, { 'If-None-Match': etag });
      assert.equal(again.status, 304, target);
      assert.equal(again.body.length, 0, target);
      assert.equal(again.headers.etag, etag, target);
      assert.equal(again.headers['cache-control'], cacheControl, target);
      assert.equal(again.headers['access-control-allow-origin'], '*', target);
      // A list of tags, a weak form of the same tag, and `*` match too; another tag does not.
      assert.equal((await raw(env(), target, { 'If-None-Match': `"nope", W/${etag}` })).status, 304, target);
      assert.equal((await raw(env(), target, { 'If-None-Match': '*' })).status, 304, target);
      assert.equal((await raw(env(), target, { 'If-None-Match': '"nope"' })).status, 200, target);
      // HEAD carries the same validators and no body.
      const head = await raw(env(), target, {}, 'HEAD');
      assert.equal(head.status, 200, target);
      assert.equal(head.headers.etag, etag, target);
      assert.equal(head.body.length, 0, target);
    }
  });

  it('asks clients to revalidate stats, which say when they were generated', async () => {
    const stats = await raw(env(), '/api/v1/stats/');
    assert.equal(stats.headers['cache-control'], 'no-cache');
    assert.match(stats.headers.etag ?? '', /^"[A-Za-z0-9_-]+"$/);
  });

  it('gives the docs assets Last-Modified and honours If-Modified-Since', async () => {
    const asset = await raw(env(), '/api/v1/docs/assets/swagger-ui.css');
    const modified = asset.headers['last-modified']!;
    assert.ok(!Number.isNaN(Date.parse(modified)), modified);
    assert.equal((await raw(env(), '/api/v1/docs/assets/swagger-ui.css', { 'If-Modified-Since': modified })).status, 304);
    const earlier = new Date(Date.parse(modified) - 1000).toUTCString();
    assert.equal((await raw(env(), '/api/v1/docs/assets/swagger-ui.css', { 'If-Modified-Since': earlier })).status, 200);
  });

  it('changes the tag when the data changes', async () => {
    const stations = await raw(env(), '/api/v1/stations/');
    const latest = await raw(env(), '/api/v1/data/latest/?station=cache-01');
    const posted = await postBatch(env(), key, { station_id: 'cache-01', readings: [{ timestamp: new Date(Date.now() - 60_000).toISOString(), temperature_c: 7.5 }] });
    assert.equal(posted.status, 201);
    const stationsAfter = await raw(env(), '/api/v1/stations/', { 'If-None-Match': stations.headers.etag! });
    assert.equal(stationsAfter.status, 200, 'a new latest reading is a new representation');
    assert.notEqual(stationsAfter.headers.etag, stations.headers.etag);
    assert.equal((await raw(env(), '/api/v1/data/latest/?station=cache-01', { 'If-None-Match': latest.headers.etag! })).status, 200);

    const team = await raw(env(), '/api/v1/team/');
    await importContent(env().db.pool, parseContentFile({ team: [{ slug: 'new-member', name: 'New Member', role: 'Technician' }] }));
    const teamAfter = await raw(env(), '/api/v1/team/', { 'If-None-Match': team.headers.etag! });
    assert.equal(teamAfter.status, 200);
    assert.notEqual(teamAfter.headers.etag, team.headers.etag);
  });

  it('sends no validators or cache headers with errors, and no tag with streamed answers', async () => {
    for (const target of ['/api/v1/data/latest/?station=nowhere', '/api/v1/notes/?page=99', '/api/v1/data/aggregate/?station=cache-01&period=year']) {
      const response = await raw(env(), target);
      assert.ok(response.status >= 400, target);
      assert.equal(response.headers.etag, undefined, target);
      assert.equal(response.headers['cache-control'], undefined, target);
    }
    const download = await raw(env(), '/api/v1/data/download/?station=cache-01');
    assert.equal(download.headers.etag, undefined);
    assert.equal(download.headers['cache-control'], 'no-store');
    const historical = await raw(env(), '/api/v1/data/historical/?station=cache-01');
    assert.equal(historical.headers.etag, undefined);
    assert.equal(historical.headers['cache-control'], 'no-cache');
  });

  it('compresses with brotli or gzip as Accept-Encoding asks, and the bytes decode to the identity answer', async () => {
    const targets = [
      '/api/v1/openapi.json', '/api/v1/stations/?output=geojson', '/api/v1/notes/', '/api/v1/docs/assets/swagger-ui-bundle.js',
      '/api/v1/data/aggregate/?station=cache-01&period=hour', '/api/v1/data/aggregate/?station=cache-01&period=hour&output=csv',
      '/api/v1/data/download/?station=cache-01',
      '/api/v1/data/historical/?station=cache-01&hours=720',
    ];
    for (const target of targets) {
      const identity = await raw(env(), target);
      assert.equal(identity.headers['content-encoding'], undefined, target);
      assert.match(identity.headers.vary ?? '', /Accept-Encoding/i, target);
      const normalise = (body: Buffer) => body.toString('utf8').replace(/retrieved \d{4}-\d{2}-\d{2}/g, 'retrieved');
      for (const [accept, encoding, decode] of [
        ['br', 'br', brotliDecompressSync],
        ['gzip', 'gzip', gunzipSync],
        ['gzip, deflate, br', 'br', brotliDecompressSync],
        ['gzip;q=1.0, br;q=0.5', 'gzip', gunzipSync],
      ] as const) {
        const compressed = await raw(env(), target, { 'Accept-Encoding': accept });
        assert.equal(compressed.headers['content-encoding'], encoding, `${target} ${accept}`);
        assert.match(compressed.headers.vary ?? '', /Accept-Encoding/i, target);
        assert.ok(compressed.body.length < identity.body.length / 2, `${target}: ${compressed.body.length} of ${identity.body.length} bytes`);
        assert.equal(normalise(decode(compressed.body)), normalise(identity.body), `${target} ${accept}`);
        if (identity.headers.etag) {
          // Another representation, another strong tag; either form revalidates.
          const suffix = encoding === 'br' ? '-br' : '-gzip';
          assert.equal(compressed.headers.etag, `${identity.headers.etag.slice(0, -1)}${suffix}"`, target);
          const revalidated = await raw(env(), target, { 'Accept-Encoding': accept, 'If-None-Match': compressed.headers.etag! });
          assert.equal(revalidated.status, 304, target);
          assert.equal(revalidated.headers.etag, compressed.headers.etag, target);
          assert.equal(revalidated.headers['content-encoding'], undefined, `${target}: a 304 has no body to encode`);
        }
      }
      for (const accept of ['identity', 'compress', 'br;q=0, gzip;q=0']) {
        assert.equal((await raw(env(), target, { 'Accept-Encoding': accept })).headers['content-encoding'], undefined, `${target} ${accept}`);
      }
    }
    // Small answers are not worth it.
    const small = await raw(env(), '/api/v1/data/latest/?station=cache-01', { 'Accept-Encoding': 'br' });
    assert.equal(small.headers['content-encoding'], undefined);
  });

  it('streams a compressed download: the first bytes come long before the end, and an abandoned one frees its COPY', async function () {
    this.timeout(60_000);
    await bulkFixture(env().databaseUrl, `
      insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, quality_flag)
      select 'cache-01', '2020-01-01'::timestamptz + i * interval '1 minute', random() * 40, random() * 100, 900 + random() * 100, 'ok'
      from generate_series(1, 400000) as i`, 'analyze readings');
    for (const encoding of ['br', 'gzip']) {
      const response = await raw(env(), '/api/v1/data/download/?station=cache-01', { 'Accept-Encoding': encoding });
      assert.equal(response.headers['content-encoding'], encoding);
      assert.ok(response.firstChunkAt < response.endAt / 3, `${encoding}: first bytes after ${response.firstChunkAt.toFixed(0)} ms of ${response.endAt.toFixed(0)} ms`);
      const text = (encoding === 'br' ? brotliDecompressSync : gunzipSync)(response.body).toString('utf8');
      assert.equal(text.split('\n').filter((line) => line && !line.startsWith('#')).length, 1 + 400_000 + 3 * 1440 + 1440 + 1);
    }

    const activeCopies = () =>
      env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and state = 'active' and query ilike 'copy (%'`);
    await new Promise<void>((resolve, reject) => {
      const request = http.get(`${env().origin}/api/v1/data/download/?station=cache-01`, { headers: { 'Accept-Encoding': 'gzip' } }, (response) => {
        response.once('data', () => {
          request.destroy();
          resolve();
        });
      });
      request.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
    });
    const deadline = Date.now() + 5_000;
    while (((await activeCopies()) > 0 || env().db.streamPool.busy() > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await activeCopies(), 0, 'the COPY still runs');
    assert.equal(env().db.streamPool.busy(), 0, 'a COPY connection is still checked out');
  });
});

describeEngines('a compressed download whose client stops reading', (env) => {
  it('is cut after STREAM_STALL_MS and its connection comes back', async function () {
    this.timeout(120_000);
    await stationWithKey(env(), 'stall-01');
    // Values that compress poorly, so that the compressed answer still fills the socket's buffers. The
    // fixture is not a request: the service's statement timeout does not bound it on a slow machine.
    await bulkFixture(env().databaseUrl, `
      insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10, co2_ppm, quality_flag)
      select 'stall-01', '2020-01-01'::timestamptz + i * interval '1 minute', random() * 40, random() * 100, 900 + random() * 100,
        random() * 50, random() * 80, 400 + random() * 100, 'ok'
      from generate_series(1, 1500000) as i`, 'analyze readings');
    const started = Date.now();
    const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${env().origin}/api/v1/data/download/?station=stall-01`, { headers: { 'Accept-Encoding': 'gzip' } }, resolve).once('error', reject);
    });
    assert.equal(response.headers['content-encoding'], 'gzip');
    // The client stops reading: the server's buffers fill, and after STREAM_STALL_MS it cuts the answer.
    response.pause();
    const closed = new Promise<boolean>((resolve) => {
      response.once('close', () => resolve(response.complete));
      response.once('error', () => undefined);
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(env().db.streamPool.busy(), 1, 'the download holds its connection while it flows');
    const deadline = Date.now() + 10_000;
    while (env().db.streamPool.busy() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(env().db.streamPool.busy(), 0, 'the stalled download still holds its connection');
    const waited = Date.now() - started;
    assert.ok(waited >= 1_000, `freed after ${waited} ms, not before the stall timeout`);
    // Reading again, the client finds the answer cut short.
    response.resume();
    assert.equal(await closed, false, 'the answer was cut, not completed');
  });
}, { STREAM_STALL_MS: '1000' });
