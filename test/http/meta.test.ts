import assert from 'node:assert/strict';
import { check as checkGeoJson } from '@placemarkio/check-geojson';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines } from '../helpers/app.js';
import { addStation, makeReadings } from '../helpers/readings.js';

const problemType = 'application/problem+json';

describeEngines('discovery, health and stations', (env) => {
  it('GET /api/v1/ lists every endpoint of the OpenAPI document with absolute URLs', async () => {
    const { status, headers, body } = await env().getJson('/api/v1/');
    assert.equal(status, 200);
    assert.equal(headers.get('access-control-allow-origin'), '*');
    assert.equal(body.version, 'v1');
    assert.equal(body.base_url, 'http://envmon.test/api/v1');
    assert.equal(typeof body.api, 'string');
    assert.match(body.license, /CC BY 4\.0/);
    assert.equal(typeof body.cors, 'string');
    assert.deepEqual(body.endpoints['GET /api/v1/stations/'], {
      method: 'GET',
      url: 'http://envmon.test/api/v1/stations/',
      description: 'All stations with their latest reading',
    });
    const openapi = (await env().getJson('/api/v1/openapi.json')).body;
    const documented = Object.entries(openapi.paths).flatMap(([path, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${path}`));
    assert.deepEqual(Object.keys(body.endpoints).sort(), documented.sort());
  });

  it('health gives a station that never posted no age, never calls it fresh, and is not ok when nothing posted', async () => {
    const { db } = env();
    await addStation(db, 'h-never');
    const { status, body } = await env().getJson('/api/v1/health/');
    assert.equal(status, 200);
    assert.equal(body.ok, false);
    const never = body.stations.find((s: { station_id: string }) => s.station_id === 'h-never');
    assert.deepEqual(never, { station_id: 'h-never', status: 'active', last_seen: null, age_minutes: null, fresh: false });
  });

  it('health is ok:false with no fresh station, and lists each station with its age', async () => {
    const { db } = env();
    await addStation(db, 'h-stale');
    await storeReadings(db, 'h-stale', makeReadings(3, new Date(Date.now() - 3 * 3600_000).toISOString(), 1));
    let { status, body } = await env().getJson('/api/v1/health/');
    assert.equal(status, 200);
    assert.equal(body.ok, false);
    assert.equal(body.window_minutes, 90);
    assert.ok(Math.abs(Date.parse(body.checked_at) - Date.now()) < 60_000);
    const stale = body.stations.find((s: { station_id: string }) => s.station_id === 'h-stale');
    assert.equal(stale.fresh, false);
    assert.equal(stale.status, 'active');
    assert.ok(stale.age_minutes > 170 && stale.age_minutes < 185, `age ${stale.age_minutes}`);

    await addStation(db, 'h-fresh');
    const recent = new Date(Date.now() - 89 * 60_000).toISOString();
    await storeReadings(db, 'h-fresh', makeReadings(1, recent, 1));
    ({ status, body } = await env().getJson('/api/v1/health/'));
    assert.equal(status, 200);
    assert.equal(body.ok, true);
    const fresh = body.stations.find((s: { station_id: string }) => s.station_id === 'h-fresh');
    assert.deepEqual(Object.keys(fresh).sort(), ['age_minutes', 'fresh', 'last_seen', 'station_id', 'status']);
    assert.equal(fresh.fresh, true);
    assert.equal(fresh.last_seen, recent);
  });

  it('GET /stations/ gives each station with its latest reading, as latest_reading and latest', async () => {
    const { db } = env();
    await addStation(db, 's-one');
    const readings = makeReadings(50, '2026-02-01T00:00:00Z', 1);
    await storeReadings(db, 's-one', readings);
    const { status, body } = await env().getJson('/api/v1/stations/');
    assert.equal(status, 200);
    assert.equal(body.count, body.stations.length);
    const station = body.stations.find((s: { station_id: string }) => s.station_id === 's-one');
    const last = readings.at(-1)!;
    assert.deepEqual(station.latest_reading, {
      timestamp: last.ts,
      temperature_c: last.temperature_c,
      humidity_rh: last.humidity_rh,
      pressure_hpa: last.pressure_hpa,
      altitude_m: last.altitude_m,
      pm1_0: last.pm1_0,
      pm2_5: last.pm2_5,
      pm10: last.pm10,
      co2_ppm: last.co2_ppm,
      co_ppm: last.co_ppm,
      uv_index: last.uv_index,
      quality_flag: last.quality_flag,
      firmware_version: 'test-1',
      module_data: null,
    });
    assert.deepEqual(station.latest, station.latest_reading);
    assert.equal(station.last_seen, last.ts);
    assert.deepEqual(
      { ...station, latest: undefined, latest_reading: undefined, last_seen: undefined },
      { station_id: 's-one', name: 'Station s-one', location_name: 'Test site', altitude_m: 100, latitude: 45, longitude: 6, status: 'active', interval_seconds: 60, latest: undefined, latest_reading: undefined, last_seen: undefined },
    );
  });

  it('GET /stations/ follows each station to its newest reading as new chunks come, and lists one without readings', async () => {
    const { db } = env();
    await addStation(db, 's-weeks');
    await addStation(db, 's-none');
    // Readings months apart land in chunks of their own on timescale; the list is asked between them, on
    // every connection of the read pool, so that each has prepared its statement before the newer chunk exists.
    const asked = async () => {
      const answers = await Promise.all(Array.from({ length: env().db.poolSize }, () => env().getJson('/api/v1/stations/')));
      return answers.map(({ body }) => Object.fromEntries(body.stations.map((s: { station_id: string; last_seen: string | null }) => [s.station_id, s.last_seen])));
    };
    for (const start of ['2025-03-03T00:00:00Z', '2025-09-01T00:00:00Z', '2026-02-02T00:00:00Z']) {
      const readings = makeReadings(3, start, 60);
      await storeReadings(db, 's-weeks', readings);
      for (const seen of await asked()) {
        assert.equal(seen['s-weeks'], readings.at(-1)!.ts, start);
        assert.equal(seen['s-none'], null);
      }
    }
  });

  it('GET /stations/?output=geojson is a valid RFC 7946 FeatureCollection', async () => {
    const { db } = env();
    await addStation(db, 'g-one');
    const { upsertStation } = await import('../../src/stations/queries.js');
    await upsertStation(db.pool, { station_id: 'g-nowhere', name: 'Unlocated', location_name: '', altitude_m: 5, latitude: null, longitude: null, status: 'planned' });
    const response = await env().get('/api/v1/stations/?output=geojson');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'application/geo+json');
    const text = await response.text();
    checkGeoJson(text);
    const collection = JSON.parse(text);
    const located = collection.features.find((f: { id: string }) => f.id === 'g-one');
    assert.deepEqual(located.geometry, { type: 'Point', coordinates: [6, 45, 100] });
    assert.equal(located.properties.station_id, 'g-one');
    assert.equal(located.properties.latitude, undefined);
    assert.equal(located.properties.longitude, undefined);
    const unlocated = collection.features.find((f: { id: string }) => f.id === 'g-nowhere');
    assert.equal(unlocated.geometry, null);
    assert.equal(unlocated.properties.status, 'planned');
  });

  it('answers a bad parameter with a 400 problem naming it', async () => {
    const response = await env().get('/api/v1/stations/?output=xml');
    assert.equal(response.status, 400);
    assert.equal(response.headers.get('content-type'), problemType);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual(await response.json(), {
      type: 'urn:envmon:problem:invalid-parameters',
      title: 'Invalid parameters',
      status: 400,
      detail: 'output must be one of json, geojson',
      errors: [{ param: 'output', message: 'must be one of json, geojson' }],
    });
  });

  it('answers an unknown route with a 404 problem, CORS included, and ignores unknown parameters', async () => {
    const response = await env().get('/api/v1/nothing-here/');
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    assert.deepEqual(await response.json(), {
      type: 'urn:envmon:problem:not-found',
      title: 'Not Found',
      status: 404,
      detail: 'no resource at /api/v1/nothing-here/; see http://envmon.test/api/v1/ for the endpoints',
    });
    assert.equal((await env().get('/api/v1/stations/?colour=blue')).status, 200);
  });

  it('redirects a path that lacks only its trailing slash, and refuses a wrong method with 405', async () => {
    const redirect = await env().get('/api/v1/stations?output=geojson', { redirect: 'manual' });
    assert.equal(redirect.status, 308);
    assert.equal(redirect.headers.get('location'), '/api/v1/stations/?output=geojson');
    const wrong = await env().get('/api/v1/stations/', { method: 'DELETE' });
    assert.equal(wrong.status, 405);
    assert.equal(wrong.headers.get('allow'), 'HEAD, GET');
    assert.equal(((await wrong.json()) as { type: string }).type, 'urn:envmon:problem:method-not-allowed');
  });

  it('answers a CORS preflight from any origin', async () => {
    const response = await env().get('/api/v1/stations/', {
      method: 'OPTIONS',
      headers: { Origin: 'https://partner.example', 'Access-Control-Request-Method': 'GET' },
    });
    assert.equal(response.status, 204);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.match(response.headers.get('access-control-allow-methods') ?? '', /GET/);
  });

  it('serves an OpenAPI 3.1 document and a self-hosted documentation page', async () => {
    const { status, body } = await env().getJson('/api/v1/openapi.json');
    assert.equal(status, 200);
    assert.equal(body.openapi, '3.1.0');
    assert.ok(body.paths['/api/v1/stations/'].get.parameters.some((p: { name: string }) => p.name === 'output'));
    assert.ok(body.components.schemas.Problem);
    // "Try it out" calls the address the page was read from, whichever name reached it.
    assert.equal(body.servers[0].url, '/');
    const origin = new URL(env().origin);
    for (const host of ['127.0.0.1', 'localhost']) {
      const docsUrl = new URL('/api/v1/openapi.json', `http://${host}:${origin.port}`);
      const server = new URL(body.servers[0].url, docsUrl);
      assert.equal(server.origin, docsUrl.origin, host);
      const health = await fetch(new URL('api/v1/health/', server));
      assert.equal(health.status, 200, `${host}: ${health.status}`);
      await health.arrayBuffer();
    }
    const page = await env().get('/api/v1/docs/');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /connect-src 'self'/);
    const html = await page.text();
    assert.doesNotMatch(html, /https?:\/\//, 'no external host');
    for (const asset of ['assets/swagger-ui.css', 'assets/swagger-ui-bundle.js', 'assets/docs.js']) {
      assert.ok(html.includes(asset), asset);
      const response = await env().get(`/api/v1/docs/${asset}`);
      assert.equal(response.status, 200, asset);
      await response.arrayBuffer();
    }
    for (const name of ['..%2Fpackage.json', 'constructor', '__proto__', 'toString']) {
      assert.equal((await env().get(`/api/v1/docs/assets/${name}`)).status, 404, name);
    }
  });

  it('sends each fixed answer in every coding as the same bytes, tagged per coding and revalidated with 304', async () => {
    const { request } = await import('node:http');
    const { brotliDecompressSync, gunzipSync } = await import('node:zlib');
    // node:http, not fetch: the bytes as sent, decoded here.
    const raw = (path: string, headers: Record<string, string>) => new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(`${env().origin}${path}`, { headers }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      }).on('error', reject).end();
    });
    const decode = { identity: (b: Buffer) => b, gzip: gunzipSync, br: brotliDecompressSync };
    for (const path of ['/api/v1/', '/api/v1/openapi.json', '/api/v1/changelog/', '/api/v1/docs/assets/swagger-ui-bundle.js', '/api/v1/docs/assets/swagger-ui.css']) {
      const plain = await raw(path, { 'accept-encoding': 'identity' });
      assert.equal(plain.status, 200, path);
      const tags = new Set<unknown>();
      for (const coding of ['br', 'gzip', 'identity'] as const) {
        // Twice: the second is sent from what the first made.
        for (let i = 0; i < 2; i++) {
          const got = await raw(path, { 'accept-encoding': coding });
          assert.equal(got.status, 200, path);
          assert.equal(got.headers['content-encoding'], coding === 'identity' ? undefined : coding, path);
          assert.match(String(got.headers.vary), /Accept-Encoding/i, path);
          assert.ok(decode[coding](got.body).equals(plain.body), `${path} ${coding}`);
          tags.add(got.headers.etag);
          const again = await raw(path, { 'accept-encoding': coding, 'if-none-match': String(got.headers.etag) });
          assert.equal(again.status, 304, `${path} ${coding}`);
          assert.equal(again.body.length, 0);
        }
      }
      assert.equal(tags.size, 3, `${path}: one tag per coding`);
    }
  });
});

describe('slow clients', () => {
  it('cannot hold a connection by sending headers slowly', async function () {
    this.timeout(20_000);
    const { pino } = await import('pino');
    const net = await import('node:net');
    const { createApp } = await import('../../src/app.js');
    const { listen } = await import('../../src/http/server.js');
    const { startTestApp } = await import('../helpers/app.js');
    const { testServer } = await import('../helpers/server.js');
    const env = await startTestApp(testServer().engines[0]!);
    const running = await listen(createApp({ config: env.config, db: env.db, log: pino({ level: 'silent' }) }).app, 0, '127.0.0.1', { headersMs: 1_500 });
    try {
      const started = Date.now();
      const closedAfter = await new Promise<number>((resolve) => {
        const socket = net.connect(Number(new URL(running.url).port), '127.0.0.1', () => {
          socket.write('GET /api/v1/ HTTP/1.1\r\nHost: x\r\n');
          // One header line a second, never the blank line that ends them.
          const drip = setInterval(() => socket.writable && socket.write('X-Slow: 1\r\n'), 1_000);
          socket.on('close', () => {
            clearInterval(drip);
            resolve(Date.now() - started);
          });
          socket.on('error', () => {});
        });
      });
      assert.ok(closedAfter < 5_000, `the slow client held the connection ${closedAfter} ms`);
    } finally {
      await running.close();
      await env.close();
    }
  });
});
