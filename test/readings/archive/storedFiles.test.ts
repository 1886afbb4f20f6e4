import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { admin } from '../../helpers/database.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { lines, runCli } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';

const minute = 60_000;
const day = 86_400_000;
const mib = 1024 * 1024;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const pathOf = (url: string) => new URL(url).pathname;

type File = { url: string; bytes: number; rows: number; sha256: string };
type Record = { id: string; as_of: string; formats: { csv: File; parquet: File } };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function snapshot(env: TestEnv, url: string, client?: string): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await env.get('/api/v1/snapshots/', {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...(client ? { 'X-Forwarded-For': client } : {}) }, body: JSON.stringify({ url }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
}

async function fileOf(env: TestEnv, url: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await env.get(pathOf(url), init);
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

/** A file's stored chunks, as the database holds them: their sizes and their bytes end to end. */
async function storedChunks(env: TestEnv, id: string, format: string): Promise<{ sizes: number[]; bytes: Buffer }> {
  const { rows } = await admin(env.databaseUrl, (c) => c.query<{ n: number; bytes: Buffer }>(
    'select n, bytes from snapshot_chunks where snapshot_id = $1 and format = $2 order by n', [id, format]));
  rows.forEach((row, i) => assert.equal(row.n, i));
  return { sizes: rows.map((row) => row.bytes.length), bytes: Buffer.concat(rows.map((row) => row.bytes)) };
}

const readingsFrom = (start: number, count: number, offset: number) =>
  Array.from({ length: count }, (_, i) => ({ timestamp: new Date(start + i * minute).toISOString(), temperature_c: offset + i / 8, humidity_rh: 40 + (i % 7), pm2_5: (i * 7) % 31 }));

describeEngines('snapshot files kept once made', (env) => {
  const station = 'kept-01';
  const start = Math.floor((Date.now() - 10 * day) / day) * day;
  const dayOf = (offset: number) => new Date(start + offset * day).toISOString().slice(0, 10);
  const settings = () => ({ DATABASE_URL: env().databaseUrl, PUBLIC_URL: 'http://envmon.test' });

  before(async () => {
    const key = await stationWithKey(env(), station);
    assert.equal((await postBatch(env(), key, { station_id: station, readings: readingsFrom(start, 3000, 5) })).status, 201);
  });

  it('stores both files in the database, chunk by chunk, as the bytes their digests name', async () => {
    const made = await snapshot(env(), `/api/v1/data/download/?station=${station}&columns=all`);
    assert.equal(made.status, 201);
    const record = made.body as Record;
    for (const format of ['csv', 'parquet'] as const) {
      const { sizes, bytes } = await storedChunks(env(), record.id, format);
      assert.equal(bytes.length, record.formats[format].bytes, format);
      assert.equal(sha256(bytes), record.formats[format].sha256, format);
      assert.deepEqual(sizes, Array.from({ length: Math.ceil(bytes.length / mib) }, (_, n) => Math.min(mib, bytes.length - n * mib)), format);
    }
  });

  it('answers GET, HEAD, If-None-Match, ranges and If-Range from the stored bytes, whatever the archive becomes', async () => {
    const url = `/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(1)}`;
    const record = (await snapshot(env(), url)).body as Record;
    const file = record.formats.csv;
    const etag = `"sha256-${file.sha256}"`;
    // The archive loses the readings the snapshot holds (deleted, then gone from where deletions are
    // kept, as after a faulty restore): the files can no longer be made as recorded.
    const deleted = await runCli(['readings', 'delete', '--station', station, '--from', `${dayOf(0)}T00:00:00Z`, '--to', `${dayOf(0)}T12:00:00Z`, '--reason', 'test'], settings());
    assert.equal(deleted.code, 0, deleted.stderr);
    await admin(env().databaseUrl, (c) => c.query('delete from readings_removed where station_id = $1', [station]));
    const verified = await runCli(['snapshots', 'verify', record.id], settings());
    assert.equal(verified.code, 1);
    assert.equal(lines(verified.stdout)[0], `${record.id}\tDIFFERS (csv, parquet)\thttp://envmon.test/api/v1/snapshots/${record.id}/`);

    // Yet every request is answered from the stored bytes, and they are those recorded.
    const whole = await fileOf(env(), file.url);
    assert.equal(whole.status, 200);
    assert.equal(sha256(whole.bytes), file.sha256);
    assert.equal(whole.headers.get('content-length'), String(file.bytes));
    assert.equal(whole.headers.get('etag'), etag);
    assert.equal(whole.headers.get('repr-digest'), `sha-256=:${Buffer.from(file.sha256, 'hex').toString('base64')}:`);
    assert.equal(whole.headers.get('accept-ranges'), 'bytes');
    assert.equal(whole.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(whole.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.equal(whole.headers.get('memento-datetime'), new Date(record.as_of).toUTCString());
    assert.equal(whole.headers.get('content-encoding'), null);
    const parquet = await fileOf(env(), record.formats.parquet.url);
    assert.equal(sha256(parquet.bytes), record.formats.parquet.sha256);

    const head = await fileOf(env(), file.url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.bytes.length, 0);
    assert.equal(head.headers.get('content-length'), String(file.bytes));
    assert.equal(head.headers.get('etag'), etag);
    const notModified = await fileOf(env(), file.url, { headers: { 'If-None-Match': etag } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.bytes.length, 0);
    assert.equal(notModified.headers.get('etag'), etag);

    const size = file.bytes;
    const ranges: [string, number, number][] = [['bytes=0-99', 0, 99], ['bytes=100-', 100, size - 1], ['bytes=-50', size - 50, size - 1], [`bytes=-${size + 10}`, 0, size - 1], [`bytes=7-${size + 100}`, 7, size - 1]];
    for (const [range, first, last] of ranges) {
      const part = await fileOf(env(), file.url, { headers: { Range: range } });
      assert.equal(part.status, 206, range);
      assert.equal(part.headers.get('content-range'), `bytes ${first}-${last}/${size}`, range);
      assert.equal(part.headers.get('content-length'), String(last - first + 1), range);
      assert.deepEqual(part.bytes, whole.bytes.subarray(first, last + 1), range);
    }
    const matching = await fileOf(env(), file.url, { headers: { Range: 'bytes=10-19', 'If-Range': etag } });
    assert.equal(matching.status, 206);
    assert.deepEqual(matching.bytes, whole.bytes.subarray(10, 20));
    const other = await fileOf(env(), file.url, { headers: { Range: 'bytes=10-19', 'If-Range': '"sha256-other"' } });
    assert.equal(other.status, 200);
    assert.deepEqual(other.bytes, whole.bytes);
    const past = await env().get(pathOf(file.url), { headers: { Range: `bytes=${size}-` } });
    assert.equal(past.status, 416);
    assert.equal(past.headers.get('content-range'), `bytes */${size}`);
    assert.equal(past.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(await past.json(), {
      type: 'urn:envmon:problem:range-not-satisfiable', title: 'Range Not Satisfiable', status: 416, detail: `the file has ${size} bytes`,
    });

    // Asked for again as of its instant, the snapshot is found, not made again: made again, the
    // archive's loss would have given another result, and so another snapshot.
    const again = await snapshot(env(), `${url}&as_of=${record.as_of}`);
    assert.equal(again.status, 201);
    assert.equal(again.body.id, record.id);
  });

  it('makes, checks and stores once the files of a snapshot made before they were kept', async () => {
    const record = (await snapshot(env(), `/api/v1/data/download/?station=${station}&from_date=${dayOf(1)}`)).body as Record;
    await admin(env().databaseUrl, (c) => c.query('delete from snapshot_chunks where snapshot_id = $1', [record.id]));
    // Several first requests at once, a range among them: each gets the recorded bytes.
    const asked = await Promise.all([
      fileOf(env(), record.formats.csv.url), fileOf(env(), record.formats.csv.url), fileOf(env(), record.formats.csv.url, { headers: { Range: 'bytes=-20' } }),
      fileOf(env(), record.formats.parquet.url, { method: 'HEAD' }),
    ]);
    assert.deepEqual(asked.map((a) => a.status), [200, 200, 206, 200]);
    assert.equal(sha256(asked[0]!.bytes), record.formats.csv.sha256);
    assert.deepEqual(asked[1]!.bytes, asked[0]!.bytes);
    assert.deepEqual(asked[2]!.bytes, asked[0]!.bytes.subarray(-20));
    for (const format of ['csv', 'parquet'] as const) {
      const { bytes } = await storedChunks(env(), record.id, format);
      assert.equal(sha256(bytes), record.formats[format].sha256, format);
    }
    const verified = await runCli(['snapshots', 'verify', record.id], settings());
    assert.equal(verified.code, 0, verified.stdout);
    assert.match(verified.stdout, new RegExp(`^${record.id}\tok\t`));
  });
});

/** A station with sixteen days of readings, and two snapshots of eight days each as of an instant given (so that asking twice gives the same bytes). */
function twoSnapshots(env: () => TestEnv, station: string): { first: () => string; second: () => string } {
  const start = Math.floor((Date.now() - 18 * day) / day) * day;
  const dayOf = (offset: number) => new Date(start + offset * day).toISOString().slice(0, 10);
  let asOf = '';
  before(async () => {
    const key = await stationWithKey(env(), station);
    for (let i = 0; i < 16; i++) {
      assert.equal((await postBatch(env(), key, { station_id: station, readings: readingsFrom(start + i * day, 1440, i) })).status, 201);
    }
    asOf = new Date().toISOString();
  });
  const url = (from: number, to: number) => `/api/v1/data/download/?station=${station}&columns=all&from_date=${dayOf(from)}&to_date=${dayOf(to)}&as_of=${asOf}`;
  return { first: () => url(0, 7), second: () => url(8, 15) };
}

const bytesOf = (record: Record) => record.formats.csv.bytes + record.formats.parquet.bytes;

describeEngines('the snapshot store\'s bounds', (env) => {
  const { first, second } = twoSnapshots(env, 'kept-02');

  it('refuses a client past its daily quota with a 429 saying when to come back, and no one else', async () => {
    const made = await snapshot(env(), first(), '203.0.113.1');
    assert.equal(made.status, 201);
    const refused = await snapshot(env(), second(), '203.0.113.1');
    // Another client makes the same snapshot: what the first one was refused.
    const other = await snapshot(env(), second(), '203.0.113.2');
    assert.equal(other.status, 201);
    const used = bytesOf(made.body);
    const needed = bytesOf(other.body);
    assert.ok(used <= mib && needed <= mib && used + needed > mib, `${used} + ${needed}`);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(refused.body, {
      type: 'urn:envmon:problem:snapshot-quota-exceeded', title: 'Too Many Requests', status: 429,
      detail: `this client's snapshots of the last 24 hours hold ${(used / mib).toFixed(1)} MiB, and SNAPSHOT_QUOTA_MB allows 1 MiB per client per day: this one needs ${(needed / mib).toFixed(1)} MiB`,
      limit: 'SNAPSHOT_QUOTA_MB', limit_mb: 1,
    });
    // Its snapshot leaves the day a day after it was made.
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > day / 1000 - 600 && retryAfter <= day / 1000, String(retryAfter));
    // A snapshot that exists already costs nothing: the first client gets it.
    const found = await snapshot(env(), second(), '203.0.113.1');
    assert.equal(found.status, 201);
    assert.equal(found.body.id, other.body.id);
  });
}, { SNAPSHOT_QUOTA_MB: '1', TRUST_PROXY: '1' });

describeEngines('the snapshot store\'s cap', (env) => {
  const { first, second } = twoSnapshots(env, 'kept-03');

  it('refuses any snapshot past SNAPSHOT_STORE_MB with a 409 naming it', async () => {
    const made = await snapshot(env(), first(), '203.0.113.1');
    assert.equal(made.status, 201);
    const refused = await snapshot(env(), second(), '203.0.113.2');
    assert.equal(refused.status, 409);
    assert.equal(refused.headers.get('retry-after'), null);
    // The operator makes room: the refused snapshot is made, and says what it needed.
    await admin(env().databaseUrl, (c) => c.query('delete from snapshots where id = $1', [made.body.id]));
    const other = await snapshot(env(), second(), '203.0.113.2');
    assert.equal(other.status, 201);
    const stored = bytesOf(made.body);
    const needed = bytesOf(other.body);
    assert.ok(stored + needed > mib, `${stored} + ${needed}`);
    assert.deepEqual(refused.body, {
      type: 'urn:envmon:problem:snapshot-store-full', title: 'Conflict', status: 409,
      detail: `the service's snapshots hold ${(stored / mib).toFixed(1)} MiB, and SNAPSHOT_STORE_MB allows 1 MiB in all: this one needs ${(needed / mib).toFixed(1)} MiB; no snapshot can be made until the operator makes room`,
      limit: 'SNAPSHOT_STORE_MB', limit_mb: 1,
    });
    assert.equal((await admin(env().databaseUrl, (c) => c.query('select 1 from snapshot_chunks where snapshot_id = $1', [made.body.id]))).rowCount, 0);
  });
}, { SNAPSHOT_STORE_MB: '1', TRUST_PROXY: '1' });
