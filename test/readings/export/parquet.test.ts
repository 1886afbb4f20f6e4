import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { storeReadings } from '../../../src/readings/ingest/store.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { readParquet, type ParquetRead } from '../../helpers/parquet.js';
import { addStation, makeReadings } from '../../helpers/readings.js';

const licence = 'https://creativecommons.org/licenses/by/4.0/';
const parquetType = 'application/vnd.apache.parquet';

/** The data rows and header of a CSV answer, its `# ` comment lines left out. */
function csvTable(text: string) {
  const lines = text.split('\n').filter((l) => l && !l.startsWith('# '));
  return { header: lines[0]!.split(','), rows: lines.slice(1).map((l) => l.split(',')) };
}

/** A Parquet value as the CSV of the same request writes it: timestamps as ISO text to the millisecond, null as empty. */
function asCsvField(value: unknown, timestamp: boolean): string | number | null {
  if (value === null) return '';
  if (timestamp) return new Date(Number((value as bigint) / 1000n)).toISOString();
  return Number(value);
}
const csvField = (text: string, timestamp: boolean) => (timestamp || text === '' || /^[a-z]/.test(text) ? text : Number(text));

/** Asks for `path` as CSV and as Parquet and checks they hold the same table; returns the Parquet as read. */
async function sameAsCsv(env: TestEnv, path: string): Promise<ParquetRead> {
  const csvAnswer = await env.get(`${path}&output=csv`);
  assert.equal(csvAnswer.status, 200);
  const csv = csvTable(await csvAnswer.text());
  const answer = await env.get(`${path}&output=parquet`);
  assert.equal(answer.status, 200);
  assert.equal(answer.headers.get('content-type'), parquetType);
  assert.equal(answer.headers.get('content-disposition'), csvAnswer.headers.get('content-disposition')!.replace(/\.csv"$/, '.parquet"'));
  assert.equal(answer.headers.get('link'), `<${licence}>; rel="license"`);
  const file = await readParquet(new Uint8Array(await answer.arrayBuffer()));
  assert.deepEqual(file.columns, csv.header);
  assert.equal(file.rows.length, csv.rows.length);
  const timestamps = file.columns.map((name) => name === 'timestamp_utc' || name === 'period_start');
  file.rows.forEach((row, r) => {
    const expected = csv.rows[r]!.map((text, c) => csvField(text, timestamps[c]!));
    const actual = row.map((value, c) => (typeof value === 'string' ? value : asCsvField(value, timestamps[c]!)));
    assert.deepEqual(actual, expected, `row ${r} of ${path}`);
  });
  assert.equal(file.metadata.license, licence);
  assert.equal(file.metadata.citation, answer.headers.get('x-attribution'));
  assert.equal(`# Cite as: ${file.metadata.citation}`, (await (await env.get(`${path}&output=csv`)).text()).split('\n')[1]);
  return file;
}

/**
 * Downloads `path` reading every byte, and the peak growth of the live heap beyond the bytes kept: the
 * heap is collected before each sample (node --expose-gc, as the test runner starts), so that garbage
 * the encoder leaves for later does not count as memory held.
 */
async function downloadWithPeak(env: TestEnv, path: string): Promise<{ bytes: Buffer; growth: number }> {
  const gc = globalThis.gc;
  assert.ok(gc, 'the tests run with --expose-gc');
  const live = () => {
    gc();
    return process.memoryUsage().heapUsed;
  };
  const before = live();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, live())), 40);
  const response = await env.get(path);
  const chunks: Buffer[] = [];
  for await (const chunk of response.body!) chunks.push(Buffer.from(chunk));
  clearInterval(sampler);
  const bytes = Buffer.concat(chunks);
  return { bytes, growth: peak - before - bytes.length };
}

const typeOf = (file: ParquetRead, name: string) => file.schema.find((c) => c.name === name);

describeEngines('Parquet downloads and aggregates', (env) => {
  before(async () => {
    await addStation(env().db, 'pq-a');
    await addStation(env().db, 'pq-b');
    await storeReadings(env().db, 'pq-a', makeReadings(3 * 1440, '2026-03-01T00:00:00Z', 1, 31));
    await storeReadings(env().db, 'pq-b', makeReadings(3 * 144, '2026-03-01T00:00:30Z', 10, 32));
  });

  it('gives a station\'s history with typed columns, the values of the CSV, and the licence and citation in its metadata', async () => {
    const file = await sameAsCsv(env(), '/api/v1/data/download/?columns=all&qc=true&station=pq-a');
    assert.equal(file.rows.length, 3 * 1440);
    assert.match(typeOf(file, 'timestamp_utc')!.logical ?? '', /TimestampType\(isAdjustedToUTC=1, .*MICROS=MicroSeconds\(\)/i);
    assert.equal(typeOf(file, 'timestamp_utc')!.type, 'INT64');
    // Every field of a reading: the contract's columns first, in their order, then the others, then each
    // metric's QARTOD flag (as the CSV gives them with qc=true).
    const fields = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5_ugm3', 'pm10_ugm3', 'co2_ppm', 'altitude_m', 'pm1_0', 'co_ppm', 'uv_index'];
    assert.deepEqual(file.columns, ['timestamp_utc', 'temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5_ugm3', 'pm10_ugm3', 'co2_ppm', 'quality_flag',
      'altitude_m', 'pm1_0', 'co_ppm', 'uv_index', 'firmware_version', 'module_data', ...fields.map((f) => `${f}_qc`)]);
    for (const name of fields) assert.equal(typeOf(file, `${name}_qc`)!.type, 'INT32', name);
    for (const name of ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5_ugm3', 'pm10_ugm3', 'co2_ppm', 'altitude_m', 'pm1_0', 'co_ppm', 'uv_index']) {
      assert.equal(typeOf(file, name)!.type, 'DOUBLE', name);
    }
    assert.equal(typeOf(file, 'quality_flag')!.type, 'BYTE_ARRAY');
    assert.match(typeOf(file, 'quality_flag')!.logical ?? '', /String/i);
    assert.match(file.encodings.quality_flag!, /RLE_DICTIONARY/);
    // The stored timestamps to the microsecond.
    const stored = await env().db.pool.anyFirst(sql.type(z.object({ us: z.string() }))`
      select (extract(epoch from ts) * 1000000)::bigint::text as us from readings where station_id = 'pq-a' order by ts`);
    assert.deepEqual(file.rows.map((r) => String(r[0])), stored);
  });

  it('applies the same filters as CSV, and several stations with station_id', async () => {
    await sameAsCsv(env(), '/api/v1/data/download/?columns=all&qc=true&station=pq-a&from_date=2026-03-02&to_date=2026-03-02&quality=suspect');
    const both = await sameAsCsv(env(), '/api/v1/data/download/?columns=all&qc=true&stations=pq-b,pq-a&from_date=2026-03-01&to_date=2026-03-01');
    assert.equal(both.columns[0], 'station_id');
    assert.equal(both.rows.length, 1440 + 144);
    assert.match(both.encodings.station_id!, /RLE_DICTIONARY/);
    const empty = await sameAsCsv(env(), '/api/v1/data/download/?columns=all&qc=true&station=pq-a&from_date=2027-01-01');
    assert.equal(empty.rows.length, 0);
  });

  it('gives every aggregate with integer counts and the values of the CSV', async () => {
    for (const query of ['period=hour', 'period=day&quality=ok', 'period=week&from_date=2026-03-02', 'period=month&metrics=pm10,co_ppm,temperature_c&from_date=2026-03-02&to_date=2026-03-02']) {
      const file = await sameAsCsv(env(), `/api/v1/data/aggregate/?station=pq-a&${query}`);
      assert.ok(file.rows.length > 0, query);
      assert.match(typeOf(file, 'period_start')!.logical ?? '', /TimestampType\(isAdjustedToUTC=1/i);
      for (const name of ['count', 'expected']) assert.equal(typeOf(file, name)!.type, 'INT64', `${name} in ${query}`);
      for (const column of file.schema.filter((c) => c.name.endsWith('_count'))) assert.equal(column.type, 'INT64', column.name);
      for (const column of file.schema.filter((c) => /_(mean|min|max|sd)$|coverage_pct/.test(c.name))) assert.equal(column.type, 'DOUBLE', column.name);
    }
  });

  it('answers a repeated aggregate with the same bytes and ETag, never content-encoded', async () => {
    const path = '/api/v1/data/aggregate/?station=pq-a&period=hour&output=parquet';
    const first = await env().get(path, { headers: { 'accept-encoding': 'br, gzip' } });
    const bytes = Buffer.from(await first.arrayBuffer());
    assert.equal(first.headers.get('content-encoding'), null);
    const again = await env().get(path, { headers: { 'if-none-match': first.headers.get('etag')! } });
    assert.equal(again.status, 304);
    const third = await env().get(path);
    assert.deepEqual(Buffer.from(await third.arrayBuffer()), bytes);
  });

  it('answers 400 naming the parameter for an unknown output', async () => {
    for (const path of ['/api/v1/data/download/?station=pq-a&output=xlsx', '/api/v1/data/aggregate/?station=pq-a&output=xlsx']) {
      const answer = await env().getJson(path);
      assert.equal(answer.status, 400);
      assert.equal(answer.body.errors[0].param, 'output');
    }
  });

  it('streams a station-year in row groups without holding it in memory, and stops when the client goes', async function () {
    this.timeout(180_000);
    await addStation(env().db, 'pq-year');
    const rows = 525_600;
    await env().db.pool.query(sql.type(z.object({}))`
      insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10, co2_ppm, quality_flag)
      select 'pq-year', '2025-01-01'::timestamptz + i * interval '1 minute', 10 + (i % 173) / 8.0, 55.5 + i % 7, 1001.25, case when i % 11 = 0 then null else i % 90 end, 14.25, 421, case when i % 97 = 0 then 'suspect' else 'ok' end
      from generate_series(0, ${rows - 1}) as i`);
    // Client and server share this process, and the client keeps the file: the growth beyond the file's
    // bytes is the server's. Flat means a year costs what a quarter (four row groups) costs: one row group at a time.
    const quarter = await downloadWithPeak(env(), '/api/v1/data/download/?station=pq-year&output=parquet&to_date=2025-03-31');
    const year = await downloadWithPeak(env(), '/api/v1/data/download/?station=pq-year&output=parquet');
    console.log(`      Parquet: a quarter ${(quarter.bytes.length / 1e6).toFixed(1)} MB, heap +${(quarter.growth / 1e6).toFixed(1)} MB; a year ${(year.bytes.length / 1e6).toFixed(1)} MB, heap +${(year.growth / 1e6).toFixed(1)} MB beyond the bytes`);
    assert.ok(year.growth < quarter.growth + 8_000_000, `a year grew the heap by ${(year.growth / 1e6).toFixed(1)} MB, a quarter by ${(quarter.growth / 1e6).toFixed(1)} MB`);
    const chunks = [year.bytes];
    const file = await readParquet(Buffer.concat(chunks));
    assert.equal(file.rows.length, rows);
    assert.ok(file.rowGroups >= 16, `${file.rowGroups} row groups`);
    const sums = await env().db.pool.one(sql.type(z.object({ temperature: z.number(), pm2_5: z.number(), suspect: z.number() }))`
      select sum(temperature_c) as temperature, sum(pm2_5) as pm2_5, count(*) filter (where quality_flag = 'suspect')::int as suspect
      from readings where station_id = 'pq-year'`);
    const sum = (c: number) => file.rows.reduce((s: number, r) => s + ((r[c] as number | null) ?? 0), 0);
    assert.ok(Math.abs(sum(1) - sums.temperature) < 1e-6 * Math.abs(sums.temperature));
    assert.ok(Math.abs(sum(4) - sums.pm2_5) < 1e-6 * Math.abs(sums.pm2_5));
    assert.equal(file.rows.filter((r) => r[7] === 'suspect').length, sums.suspect);

    // A client that goes after the first bytes stops the COPY and frees its connection.
    const controller = new AbortController();
    const cut = await env().get('/api/v1/data/download/?station=pq-year&output=parquet', { signal: controller.signal });
    const reader = cut.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.cancel().catch(() => {});
    const deadline = Date.now() + 5_000;
    while (env().db.streamPool.busy() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(env().db.streamPool.busy(), 0, 'a COPY connection is still checked out');
    assert.equal((await env().get('/api/v1/data/download/?station=pq-b&output=parquet')).status, 200);
  });
});
