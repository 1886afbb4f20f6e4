import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { storeReadings } from '../../../src/readings/ingest/store.js';
import { parse as parseCsvRecords } from 'csv-parse/sync';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { addStation, bulkFixture, makeReadings } from '../../helpers/readings.js';

const licence = 'https://creativecommons.org/licenses/by/4.0/';
const columns = 'timestamp_utc,temperature_c,humidity_rh,pressure_hpa,pm2_5_ugm3,pm10_ugm3,co2_ppm,quality_flag';

function parseCsv(text: string) {
  const lines = text.split('\n');
  assert.equal(lines.pop(), '', 'ends with a newline');
  const comments = lines.filter((l) => l.startsWith('# '));
  const rest = lines.slice(comments.length);
  return { comments, header: rest[0]!, rows: rest.slice(1).map((l) => l.split(',')) };
}

describeEngines('GET /data/download/', (env) => {
  before(async () => {
    await addStation(env().db, 'dl-a');
    await addStation(env().db, 'dl-b');
    await storeReadings(env().db, 'dl-a', makeReadings(3 * 1440, '2026-03-01T00:00:00Z', 1, 21));
    await storeReadings(env().db, 'dl-b', makeReadings(3 * 144, '2026-03-01T00:00:30Z', 10, 22));
  });

  it('streams one station\'s history as CSV with licence, citation, attribution headers and the documented columns', async () => {
    const response = await env().get('/api/v1/data/download/?station=dl-a');
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.equal(response.headers.get('content-disposition'), 'attachment; filename="envmon_dl-a_start_latest.csv"');
    assert.equal(response.headers.get('link'), `<${licence}>; rel="license"`);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.match(response.headers.get('x-attribution') ?? '', /^envmon environmental monitoring network, station dl-a, readings full history, retrieved \d{4}-\d{2}-\d{2} from http:\/\/envmon\.test\/api\/v1\/data\/download\/\?station=dl-a\. Licensed CC BY 4\.0\.$/);
    const csv = parseCsv(await response.text());
    assert.equal(csv.comments[0], `# Data licensed under Creative Commons Attribution 4.0 International (CC BY 4.0): ${licence}`);
    assert.equal(csv.comments[1], `# Cite as: ${response.headers.get('x-attribution')}`);
    assert.equal(csv.header, columns);
    assert.equal(csv.rows.length, 3 * 1440);
    const stored = await env().db.pool.one(sql.type(z.object({ ts: z.string(), temperature_c: z.number().nullable(), humidity_rh: z.number().nullable(), pressure_hpa: z.number().nullable(), pm2_5: z.number().nullable(), pm10: z.number().nullable(), co2_ppm: z.number().nullable(), quality_flag: z.string() }))`
      select ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10, co2_ppm, quality_flag from readings where station_id = 'dl-a' order by ts limit 1`);
    assert.deepEqual(csv.rows[0], [stored.ts, stored.temperature_c, stored.humidity_rh, stored.pressure_hpa, stored.pm2_5, stored.pm10, stored.co2_ppm, stored.quality_flag].map((v) => (v === null ? '' : String(v))));
    const times = csv.rows.map((r) => r[0]!);
    assert.deepEqual(times, [...times].sort());
  });

  it('takes inclusive date ranges and a quality filter', async () => {
    const day = parseCsv(await (await env().get('/api/v1/data/download/?station=dl-a&from_date=2026-03-02&to_date=2026-03-02')).text());
    assert.equal(day.rows.length, 1440);
    assert.equal(day.rows[0]![0], '2026-03-02T00:00:00.000Z');
    assert.equal(day.rows.at(-1)![0], '2026-03-02T23:59:00.000Z');
    const from = parseCsv(await (await env().get('/api/v1/data/download/?station=dl-a&from_date=2026-03-03')).text());
    assert.equal(from.rows.length, 1440);
    const ok = parseCsv(await (await env().get('/api/v1/data/download/?station=dl-a&quality=ok')).text());
    const suspect = parseCsv(await (await env().get('/api/v1/data/download/?station=dl-a&quality=suspect')).text());
    assert.ok(ok.rows.every((r) => r[7] === 'ok'));
    assert.ok(suspect.rows.every((r) => r[7] === 'suspect'));
    assert.ok(suspect.rows.length > 0);
    assert.equal(ok.rows.length + suspect.rows.length, 3 * 1440);
  });

  it('combines several stations with station_id first, sorted by timestamp', async () => {
    const response = await env().get('/api/v1/data/download/?stations=dl-b,dl-a&from_date=2026-03-01&to_date=2026-03-01');
    assert.equal(response.headers.get('content-disposition'), 'attachment; filename="envmon_2-stations_2026-03-01_2026-03-01.csv"');
    const csv = parseCsv(await response.text());
    assert.equal(csv.header, `station_id,${columns}`);
    assert.equal(csv.rows.length, 1440 + 144);
    const keys = csv.rows.map((r) => `${r[1]} ${r[0]}`);
    assert.deepEqual(keys, [...keys].sort());
    assert.deepEqual(new Set(csv.rows.map((r) => r[0])), new Set(['dl-a', 'dl-b']));
    assert.match(csv.comments[1]!, /stations dl-b, dl-a, readings from 2026-03-01 to 2026-03-01/);
  });

  it('gives every field of a reading with columns=all, as posted, the contract\'s columns first', async () => {
    const key = await stationWithKey(env(), 'dl-all');
    const posted = [
      { timestamp: '2026-04-01T00:00:00Z', temperature_c: 1.5, humidity_rh: 40, pressure_hpa: 990.25, altitude_m: 1200, pm1_0: 0.5, pm2_5: 3.25, pm10: 7, co2_ppm: 415, co_ppm: 0.125, uv_index: 2, firmware_version: 'v2, "beta"', module_data: { note: 'a, "quoted" # not a comment', n: 1 } },
      { timestamp: '2026-04-01T00:01:00Z', temperature_c: null, pm1_0: 1 },
    ];
    assert.equal((await postBatch(env(), key, { station_id: 'dl-all', readings: posted })).status, 201);
    const text = await (await env().get('/api/v1/data/download/?station=dl-all&columns=all')).text();
    // A CSV reader as a client uses one, the comment lines left out.
    const [header, ...rows] = parseCsvRecords(text.split('\n').filter((line) => !line.startsWith('# ')).join('\n')) as string[][];
    assert.deepEqual(header, [...columns.split(','), 'altitude_m', 'pm1_0', 'co_ppm', 'uv_index', 'firmware_version', 'module_data']);
    const field = (row: string[], name: string) => row[header!.indexOf(name)]!;
    const numberOrNull = (text: string) => (text === '' ? null : Number(text));
    posted.forEach((reading, r) => {
      const row = rows[r]!;
      assert.equal(field(row, 'timestamp_utc'), new Date(reading.timestamp).toISOString());
      for (const [name, column] of [['temperature_c', 'temperature_c'], ['humidity_rh', 'humidity_rh'], ['pressure_hpa', 'pressure_hpa'], ['pm2_5', 'pm2_5_ugm3'],
        ['pm10', 'pm10_ugm3'], ['co2_ppm', 'co2_ppm'], ['altitude_m', 'altitude_m'], ['pm1_0', 'pm1_0'], ['co_ppm', 'co_ppm'], ['uv_index', 'uv_index']] as const) {
        assert.equal(numberOrNull(field(row, column)), (reading as Record<string, unknown>)[name] ?? null, column);
      }
      assert.equal(field(row, 'firmware_version'), reading.firmware_version ?? '');
      assert.deepEqual(field(row, 'module_data') === '' ? null : JSON.parse(field(row, 'module_data')), reading.module_data ?? null);
    });
    assert.equal(rows.length, posted.length);
  });

  it('answers 400 for station with stations and bad dates, 404 for unknown stations', async () => {
    const both = await env().getJson('/api/v1/data/download/?station=dl-a&stations=dl-b');
    assert.equal(both.status, 400);
    assert.deepEqual(both.body.errors, [{ param: 'stations', message: 'cannot be combined with station: use one' }]);
    const dates = await env().getJson('/api/v1/data/download/?station=dl-a&from_date=2026-03-03&to_date=2026-03-01');
    assert.deepEqual(dates.body.errors, [{ param: 'from_date', message: 'must not be after to_date' }]);
    const unknown = await env().getJson('/api/v1/data/download/?stations=dl-a,dl-x,dl-y');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers.get('content-disposition'), null);
    assert.equal(unknown.body.detail, "stations 'dl-x', 'dl-y' are unknown");
    assert.equal((await env().getJson('/api/v1/data/download/')).status, 400);
  });

  it('streams a large history without holding it in memory', async function () {
    this.timeout(120_000);
    await addStation(env().db, 'dl-big');
    const rows = 1_000_000;
    // Without a statement timeout: on a busy machine a million rows (and their rollups) take their time.
    await bulkFixture(env().databaseUrl, `
      insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10, co2_ppm, quality_flag, firmware_version)
      select 'dl-big', '2020-01-01'::timestamptz + i * interval '1 minute', 10 + i % 17, 55.5, 1001.25, 8.5, 14.25, 421, 'ok', '2.4.1'
      from generate_series(1, ${rows}) as i`);
    const before = process.memoryUsage().heapUsed;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed)), 5);
    const response = await env().get('/api/v1/data/download/?station=dl-big');
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of response.body!) {
      bytes += chunk.length;
      for (const byte of chunk as Uint8Array) if (byte === 10) newlines++;
    }
    clearInterval(sampler);
    assert.equal(newlines, rows + 4);
    assert.ok(bytes > 55_000_000, `${bytes} bytes`);
    // Client and server share this process, so the bound covers both: holding the history would take
    // more than the bytes themselves; streaming keeps the growth to buffers.
    const growth = peak - before;
    assert.ok(growth < 25_000_000, `heap grew by ${(growth / 1e6).toFixed(1)} MB while streaming ${(bytes / 1e6).toFixed(1)} MB`);
  });

  it('stops the COPY and frees its connection when the client disconnects mid-download', async function () {
    this.timeout(60_000);
    const controller = new AbortController();
    const response = await env().get('/api/v1/data/download/?station=dl-big', { signal: controller.signal });
    const reader = response.body!.getReader();
    await reader.read();
    controller.abort();
    await reader.cancel().catch(() => {});
    const activeCopies = () =>
      env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid() and state = 'active' and query ilike 'copy (%'`);
    const deadline = Date.now() + 5_000;
    while ((await activeCopies()) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await activeCopies(), 0, 'the COPY still runs');
    assert.equal(env().db.streamPool.busy(), 0, 'a COPY connection is still checked out');
    // The service still answers downloads afterwards.
    assert.equal((await env().get('/api/v1/data/download/?station=dl-b&from_date=2026-03-01&to_date=2026-03-01')).status, 200);
  });
});

describeEngines('download limits', (env) => {
  it('cuts a download that outlives DOWNLOAD_TIMEOUT_MS and frees its connection', async function () {
    this.timeout(60_000);
    await addStation(env().db, 'dl-slow');
    // Analysed as after any real load: planned on fresh statistics, the first row comes well within the limit even on a busy machine.
    await bulkFixture(env().databaseUrl, `
      insert into readings (station_id, ts, temperature_c, quality_flag)
      select 'dl-slow', '2020-01-01'::timestamptz + i * interval '1 minute', 1, 'ok' from generate_series(1, 300000) as i`, 'analyze readings');
    // Uncompressed, so that the answer is large enough to outlive the limit at this client's pace.
    const response = await env().get('/api/v1/data/download/?station=dl-slow', { headers: { 'Accept-Encoding': 'identity' } });
    assert.equal(response.status, 200);
    // A client that reads at 500 kB/s, however the bytes come in chunks: the answer (about 15 MB) would
    // take it half a minute, and what the server can have written into socket buffers by its limit is far less.
    const reader = response.body!.getReader();
    let failed = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        await new Promise((r) => setTimeout(r, value.length / 500));
      }
    } catch {
      failed = true;
    }
    assert.ok(failed, 'the response was cut rather than completed');
    const pool = env().db.streamPool;
    const deadline = Date.now() + 5_000;
    while (pool.busy() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(pool.busy(), 0);
  });

  it('puts nothing a spreadsheet would run as a formula into a CSV', async () => {
    await addStation(env().db, 'dl-csv');
    await storeReadings(env().db, 'dl-csv', makeReadings(500, '2026-03-01T00:00:00Z', 1, 31));
    for (const path of ['/api/v1/data/download/?station=dl-csv', '/api/v1/data/download/?stations=dl-csv', '/api/v1/data/aggregate/?station=dl-csv&output=csv']) {
      const rows = (await (await env().get(path)).text()).split('\n').filter((l) => l && !l.startsWith('# ')).slice(1);
      for (const field of rows.flatMap((r) => r.split(','))) {
        // Every field is a number, a timestamp, a flag or a station id: none can start a formula.
        assert.match(field, /^(|-?\d+(\.\d+)?(e[+-]?\d+)?|\d{4}-\d{2}-\d{2}T[\d:.]+Z|ok|suspect|invalid|[A-Za-z0-9][A-Za-z0-9_.-]*)$/, `${path}: ${field}`);
        assert.doesNotMatch(field, /^[=+@]/);
      }
    }
    // The one free text a station writes, given whole by columns=all.
    const key = await stationWithKey(env(), 'dl-formula');
    const firmware = ['=HYPERLINK("http://x.example")', '+1+1', '@SUM(A1)', '\tx', 'v1.2'];
    const readings = firmware.map((firmware_version, i) => ({ timestamp: new Date(Date.UTC(2026, 3, 2, 0, i)).toISOString(), temperature_c: 1, firmware_version }));
    assert.equal((await postBatch(env(), key, { station_id: 'dl-formula', readings })).status, 201);
    const text = await (await env().get('/api/v1/data/download/?station=dl-formula&columns=all')).text();
    const [header, ...rows] = parseCsvRecords(text.split('\n').filter((line) => !line.startsWith('# ')).join('\n')) as string[][];
    const given = rows.map((row) => row[header!.indexOf('firmware_version')]!);
    assert.deepEqual(given, firmware.map((f) => (/^[=+@\t]/.test(f) ? `'${f}` : f)));
  });
}, { DOWNLOAD_TIMEOUT_MS: '1000' });
