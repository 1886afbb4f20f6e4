import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { asyncBufferFromUrl, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';

const minute = 60_000;
const day = 86_400_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function snapshot(env: TestEnv, url: string): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

async function bytesOf(env: TestEnv, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await env.get(path, { headers });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

const pathOf = (url: string) => new URL(url).pathname;

describeEngines('snapshots', (env) => {
  const station = 'snap-01';
  let key: string;
  const base = Math.floor((Date.now() - 20 * day) / day) * day;
  const readings = (from: number, count: number, offset: number) =>
    Array.from({ length: count }, (_, i) => ({ timestamp: new Date(base + (from + i) * minute).toISOString(), temperature_c: offset + i / 8, humidity_rh: 40 + (i % 7), module_data: { board: `b${i % 3}` } }));
  const dayOf = (offset: number) => new Date(base + offset * day).toISOString().slice(0, 10);
  const downloadUrl = () => `http://elsewhere.example/api/v1/data/download/?to_date=${dayOf(2)}&station=${station}&from_date=${dayOf(0)}&output=parquet`;

  before(async () => {
    key = await stationWithKey(env(), station);
    assert.equal((await postBatch(env(), key, { station_id: station, readings: readings(0, 2000, 3) })).status, 201);
  });

  it('keeps a download under an id whose files are the same bytes on every request, whatever the archive does next', async () => {
    const made = await snapshot(env(), downloadUrl());
    assert.equal(made.status, 201);
    const record = made.body;
    assert.equal(made.headers.get('location'), record.url);
    assert.match(record.id, /^[0-9a-f]{24}$/);
    assert.equal(record.url, `http://envmon.test/api/v1/snapshots/${record.id}/`);
    // The normalised query: every parameter with its value, output left out, as_of added.
    assert.equal(record.query, `http://envmon.test/api/v1/data/download/?as_of=${encodeURIComponent(record.as_of)}&columns=default&from_date=${dayOf(0)}&station=${station}&to_date=${dayOf(2)}`);
    assert.ok(record.citation.includes(record.url) && record.citation.includes(`as of ${record.as_of}`), record.citation);
    assert.equal(record.formats.csv.rows, 2000);
    assert.equal(record.formats.parquet.rows, 2000);
    assert.deepEqual((await env().getJson(pathOf(record.url))).body, record);

    const csv = await bytesOf(env(), pathOf(record.formats.csv.url));
    assert.equal(csv.status, 200);
    assert.equal(sha256(csv.bytes), record.formats.csv.sha256);
    assert.equal(csv.bytes.length, record.formats.csv.bytes);
    assert.equal(csv.headers.get('content-length'), String(record.formats.csv.bytes));
    assert.equal(csv.headers.get('etag'), `"sha256-${record.formats.csv.sha256}"`);
    assert.equal(csv.headers.get('repr-digest'), `sha-256=:${Buffer.from(record.formats.csv.sha256, 'hex').toString('base64')}:`);
    assert.match(csv.headers.get('cache-control')!, /immutable/);
    assert.equal(csv.headers.get('accept-ranges'), 'bytes');
    assert.equal(csv.headers.get('content-encoding'), null);
    const text = csv.bytes.toString();
    assert.ok(text.split('\n')[1]!.startsWith('# Cite as: ') && text.includes(record.url));
    // The rows are those of a download as of the snapshot's instant.
    const asOfDownload = await (await env().get(`/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(2)}&as_of=${record.as_of}`)).text();
    assert.deepEqual(text.split('\n').filter((l) => !l.startsWith('#')), asOfDownload.split('\n').filter((l) => !l.startsWith('#')));
    const parquet = await bytesOf(env(), pathOf(record.formats.parquet.url));
    assert.equal(sha256(parquet.bytes), record.formats.parquet.sha256);
    const read = await readParquet(new Uint8Array(parquet.bytes));
    assert.equal(read.rows.length, 2000);
    assert.equal(read.metadata.as_of, record.as_of);
    assert.equal(read.metadata.snapshot, record.url);

    // The archive changes: a backfill inside the range, an override, a deletion, a re-sent batch.
    await postBatch(env(), key, { station_id: station, readings: readings(2100, 300, 50) });
    await recordOverride(env().db, { stationId: station, from: new Date(base + 10 * minute).toISOString(), to: new Date(base + 400 * minute).toISOString(), flag: 'invalid', reason: 'broken fan' });
    await deleteReadings(env().db, { stationId: station, from: new Date(base + 500 * minute).toISOString(), to: new Date(base + 520 * minute).toISOString(), reason: 'test rig' });
    await postBatch(env(), key, { station_id: station, readings: readings(0, 50, 90) });
    for (const format of ['csv', 'parquet'] as const) {
      const again = await bytesOf(env(), pathOf(record.formats[format].url));
      assert.equal(sha256(again.bytes), record.formats[format].sha256, format);
    }

    // The same query now has another result: another snapshot, and the first says what changed since.
    const later = await snapshot(env(), downloadUrl());
    assert.equal(later.status, 201);
    assert.notEqual(later.body.id, record.id);
    assert.equal(later.body.formats.csv.rows, 2000 + 300 - 21);
    const changes = await env().getJson(`${pathOf(record.url)}changes/`);
    assert.equal(changes.status, 200);
    assert.equal(changes.body.differs, true);
    assert.deepEqual(changes.body.changes.map((c: { kind: string }) => c.kind), ['backfill', 'override', 'deletion']);
    assert.deepEqual(changes.body.changes[0], {
      kind: 'backfill', station, at: changes.body.changes[0].at,
      first: new Date(base + 2100 * minute).toISOString(), last: new Date(base + 2399 * minute).toISOString(), count: 300,
    });
    assert.equal(changes.body.changes[1].reason, 'broken fan');
    assert.equal(changes.body.changes[2].count, 21);
    assert.equal(changes.body.changes[2].reason, 'test rig');
    // The station's change log, after the snapshot's instant, says the same.
    const log = await env().getJson(`/api/v1/data/changes/?station=${station}&since=${record.as_of}`);
    assert.equal(log.status, 200);
    assert.deepEqual(log.body.changes, changes.body.changes);
    // Nothing changed after the later snapshot: the same query gives it again.
    const same = await snapshot(env(), `/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(2)}&columns=default`);
    assert.equal(same.body.id, later.body.id);
    assert.equal(same.body.as_of, later.body.as_of);
    assert.equal((await env().getJson(`${pathOf(later.body.url)}changes/`)).body.differs, false);
  });

  it('serves byte ranges, conditional requests and HEAD as a file server does', async () => {
    const { body: record } = await snapshot(env(), `/api/v1/data/download/?station=${station}`);
    const path = pathOf(record.formats.csv.url);
    const whole = (await bytesOf(env(), path)).bytes;
    const size = whole.length;
    const cases: [string, number, number][] = [['bytes=0-99', 0, 99], ['bytes=100-', 100, size - 1], ['bytes=-50', size - 50, size - 1], [`bytes=10-${size + 100}`, 10, size - 1]];
    for (const [range, start, end] of cases) {
      const part = await bytesOf(env(), path, { Range: range });
      assert.equal(part.status, 206, range);
      assert.equal(part.headers.get('content-range'), `bytes ${start}-${end}/${size}`);
      assert.deepEqual(part.bytes, whole.subarray(start, end + 1), range);
    }
    // A reader asks for several ranges at once: none is refused.
    const parallel = await Promise.all(Array.from({ length: 8 }, (_, i) => bytesOf(env(), path, { Range: `bytes=${i * 10}-${i * 10 + 9}` })));
    parallel.forEach((part, i) => {
      assert.equal(part.status, 206);
      assert.deepEqual(part.bytes, whole.subarray(i * 10, i * 10 + 10));
    });
    const past = await bytesOf(env(), path, { Range: `bytes=${size}-` });
    assert.equal(past.status, 416);
    assert.equal(past.headers.get('content-range'), `bytes */${size}`);
    const etag = `"sha256-${record.formats.csv.sha256}"`;
    assert.equal((await bytesOf(env(), path, { 'If-None-Match': etag })).status, 304);
    // An If-Range naming another version gets the whole file.
    assert.equal((await bytesOf(env(), path, { Range: 'bytes=0-9', 'If-Range': '"other"' })).status, 200);
    const head = await env().get(path, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-length'), String(size));
  });

  it('is read by URL by a Parquet reader through HTTP ranges', async () => {
    const { body: record } = await snapshot(env(), `/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(0)}`);
    const file = await asyncBufferFromUrl({ url: `${env().origin}${pathOf(record.formats.parquet.url)}` });
    const metadata = await parquetMetadataAsync(file);
    assert.equal(Number(metadata.num_rows), record.formats.parquet.rows);
    const rows = await parquetReadObjects({ file, columns: ['timestamp_utc', 'temperature_c', 'quality_flag'] });
    // The same rows as DuckDB reads from the whole file.
    const whole = await readParquet(new Uint8Array((await bytesOf(env(), pathOf(record.formats.parquet.url))).bytes));
    const temperature = whole.columns.indexOf('temperature_c');
    assert.deepEqual(rows.map((r) => r.temperature_c), whole.rows.map((r) => r[temperature]));
  });

  it('keeps aggregates and historical windows, and refuses what is not a readings URL', async () => {
    const aggregate = await snapshot(env(), `/api/v1/data/aggregate/?station=${station}&period=hour&metrics=temperature_c,humidity_rh&from_date=${dayOf(0)}&to_date=${dayOf(1)}`);
    assert.equal(aggregate.status, 201);
    const csv = (await bytesOf(env(), pathOf(aggregate.body.formats.csv.url))).bytes.toString();
    const live = await (await env().get(`/api/v1/data/aggregate/?station=${station}&period=hour&metrics=temperature_c,humidity_rh&from_date=${dayOf(0)}&to_date=${dayOf(1)}&output=csv&as_of=${aggregate.body.as_of}`)).text();
    assert.deepEqual(csv.split('\n').filter((l) => !l.startsWith('#')), live.split('\n').filter((l) => !l.startsWith('#')));
    const historical = await snapshot(env(), `/api/v1/data/historical/?station=${station}&hours=720`);
    assert.equal(historical.status, 201);
    assert.ok(historical.body.formats.csv.rows > 0);
    const compare = await snapshot(env(), `/api/v1/data/compare/?stations=${station}&hours=720&param=humidity_rh`);
    assert.equal(compare.status, 201);
    const compared = (await bytesOf(env(), pathOf(compare.body.formats.csv.url))).bytes.toString().split('\n').filter((l) => l && !l.startsWith('#'));
    const asOfCompare = await env().getJson(`/api/v1/data/compare/?stations=${station}&hours=720&param=humidity_rh&as_of=${compare.body.as_of}`);
    assert.equal(compared[0], `timestamp,${station}`);
    assert.deepEqual(compared.slice(1), asOfCompare.body.timestamps.map((t: string, i: number) => `${t},${asOfCompare.body.series[station][i] ?? ''}`));
    const compareParquet = await readParquet(new Uint8Array((await bytesOf(env(), pathOf(compare.body.formats.parquet.url))).bytes));
    assert.equal(compareParquet.rows.length, asOfCompare.body.timestamps.length);
    for (const [url, param] of [['/api/v1/stations/', 'url'], ['/api/v1/data/download/?station=snap-01&from_date=2026-02-30', 'url: from_date'], ['not a url at all %%%', 'url']] as const) {
      const refused = await snapshot(env(), url);
      assert.equal(refused.status, 400, url);
      assert.equal(refused.body.errors[0].param, param, url);
    }
    const unknown = await snapshot(env(), '/api/v1/data/download/?station=snap-nowhere');
    assert.equal(unknown.status, 404);
    assert.equal((await env().getJson('/api/v1/snapshots/0123456789abcdef01234567/')).status, 404);
    assert.equal((await env().getJson('/api/v1/snapshots/nope/data.csv')).status, 404);
  });
});

describeEngines('a snapshot too large to hold', (env) => {
  it('is refused with a 400 naming the url, before anything is recorded', async () => {
    const key = await stationWithKey(env(), 'snap-big');
    const start = Date.parse('2026-01-01T00:00:00Z');
    const big = Array.from({ length: 20_000 }, (_, i) => ({ timestamp: new Date(start + i * minute).toISOString(), temperature_c: i / 3, humidity_rh: 50, module_data: { board: 'a-rather-long-board-name' } }));
    for (let i = 0; i < big.length; i += 5000) assert.equal((await postBatch(env(), key, { station_id: 'snap-big', readings: big.slice(i, i + 5000) })).status, 201);
    const refused = await snapshot(env(), '/api/v1/data/download/?station=snap-big&columns=all');
    assert.equal(refused.status, 400);
    assert.equal(refused.body.errors[0].param, 'url');
    assert.match(refused.body.errors[0].message, /SNAPSHOT_MAX_MB/);
    assert.equal((await snapshot(env(), '/api/v1/data/download/?station=snap-big&from_date=2026-01-01&to_date=2026-01-01')).status, 201);
  });
}, { SNAPSHOT_MAX_MB: '1' });
