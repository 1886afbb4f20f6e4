import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { countReadings } from '../../helpers/readings.js';

const minute = (i: number) => new Date(Date.parse('2026-05-01T00:00:00Z') + i * 60_000).toISOString();

// One batch in the three formats: every rule of a reading that CSV can express.
const columns = ['timestamp', 'temperature_c', 'air_hum', 'pressure_hpa', 'pm2_5', 'soil_temp', 'wind_dir', 'firmware_version', 'module_data'] as const;
const rows: (string | number | null)[][] = [
  [minute(0), 12.5, 40, 1001.5, 8, 8.2, 'NE', 'fw-9', '{"board":"v2","ok":true}'],
  [minute(1), 61, null, null, null, null, null, null, null], // suspect
  ['yesterday', 1, null, null, null, null, null, null, null], // row error
  [minute(3), 'warm', null, null, null, null, null, null, null], // row error
  [minute(0), 99, null, null, null, null, null, null, null], // duplicate inside the batch: the first wins
  [minute(2), -0.25, 100, 999, 1e-7, null, null, 'a "quoted", text', null],
];
const objects = rows.map((row) => Object.fromEntries(columns.flatMap((c, i) => {
  const value = row[i];
  if (value === null) return [];
  return [[c, c === 'module_data' ? JSON.parse(value as string) : value]];
})));
const csvField = (value: string | number | null) => (value === null ? '' : /[",\n]/.test(String(value)) ? `"${String(value).replace(/"/g, '""')}"` : String(value));
const csv = [columns.join(','), ...rows.map((row) => row.map(csvField).join(','))].join('\r\n') + '\r\n';
const ndjson = objects.map((o) => JSON.stringify(o)).join('\n') + '\n';

const expected = {
  accepted: 3, duplicates: 1, errors: 2,
  error_details: [
    { index: 2, reason: "timestamp 'yesterday' is not an ISO 8601 date-time" },
    { index: 3, reason: 'temperature_c must be a number or null' },
  ],
};

const storedRow = z.object({ ts: z.string(), temperature_c: z.number().nullable(), humidity_rh: z.number().nullable(), pressure_hpa: z.number().nullable(), pm2_5: z.number().nullable(), quality_flag: z.string(), firmware_version: z.string().nullable(), module_data: z.unknown() });

describeEngines('ingest in NDJSON and CSV', (env) => {
  const stored = (stationId: string) =>
    env().db.pool.any(sql.type(storedRow)`
      select ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, quality_flag, firmware_version, module_data
      from readings where station_id = ${stationId} order by ts`);

  it('stores the same readings and gives the same counts as the same batch in JSON', async () => {
    const keys = { json: await stationWithKey(env(), 'fmt-json'), ndjson: await stationWithKey(env(), 'fmt-ndjson'), csv: await stationWithKey(env(), 'fmt-csv') };
    const json = await postBatch(env(), keys.json, { station_id: 'fmt-json', readings: objects });
    const nd = await postBatch(env(), keys.ndjson, ndjson, { 'Content-Type': 'application/x-ndjson' });
    const fromCsv = await postBatch(env(), keys.csv, csv, { 'Content-Type': 'text/csv; charset=utf-8' });
    for (const result of [json, nd, fromCsv]) {
      assert.equal(result.status, 201);
      assert.deepEqual(result.body, expected);
    }
    const reference = await stored('fmt-json');
    assert.equal(reference.length, 3);
    assert.deepEqual(reference[0], {
      ts: minute(0), temperature_c: 12.5, humidity_rh: 40, pressure_hpa: 1001.5, pm2_5: 8, quality_flag: 'ok', firmware_version: 'fw-9',
      module_data: { board: 'v2', ok: true, soil_temp: 8.2, wind_dir: 'NE' },
    });
    assert.equal(reference[1]!.quality_flag, 'suspect');
    assert.equal(reference[2]!.firmware_version, 'a "quoted", text');
    assert.deepEqual(await stored('fmt-ndjson'), reference);
    assert.deepEqual(await stored('fmt-csv'), reference);

    const again = await postBatch(env(), keys.csv, csv, { 'Content-Type': 'text/csv' });
    assert.deepEqual(again.body, { ...expected, accepted: 0, duplicates: 4 });
  });

  it('counts an NDJSON line that is not JSON as that reading\'s error, skips blank lines, and refuses __proto__ whole', async () => {
    const key = await stationWithKey(env(), 'fmt-nd-errors');
    const body = `{"timestamp":"${minute(0)}","temperature_c":1}\n\n{"timestamp":"${minute(1)}",\n{"timestamp":"${minute(2)}","temperature_c":3}`;
    const result = await postBatch(env(), key, body, { 'Content-Type': 'application/x-ndjson' });
    assert.equal(result.status, 201);
    assert.deepEqual(result.body, { accepted: 2, duplicates: 0, errors: 1, error_details: [{ index: 1, reason: 'the line is not a JSON object' }] });
    const poisoned = await postBatch(env(), key, `{"timestamp":"${minute(5)}","temperature_c":1}\n{"timestamp":"${minute(6)}","__proto__":{"x":1}}\n`, { 'Content-Type': 'application/x-ndjson' });
    assert.equal(poisoned.status, 400);
    assert.match(poisoned.body.detail, /__proto__/);
    assert.equal(await countReadings(env().db, 'fmt-nd-errors'), 2);
  });

  it('counts a CSV row with the wrong number of fields as that reading\'s error; a body with no header or no timestamp column is a 400', async () => {
    const key = await stationWithKey(env(), 'fmt-csv-errors');
    const post = (body: string) => postBatch(env(), key, body, { 'Content-Type': 'text/csv' });
    const result = await post(`timestamp,temperature_c\n${minute(0)},1\n${minute(1)},2,3\n${minute(2)}\n${minute(3)},4\n`);
    assert.equal(result.status, 201);
    assert.deepEqual(result.body, {
      accepted: 2, duplicates: 0, errors: 2,
      error_details: [{ index: 1, reason: 'the row has 3 fields; the header has 2' }, { index: 2, reason: 'the row has 1 fields; the header has 2' }],
    });
    // As a spreadsheet program saves it: a byte-order mark, spaces after the commas of the header, CRLF.
    const fromSpreadsheet = await post(`\uFEFFtimestamp, temperature_c\r\n${minute(4)},5\r\n`);
    assert.deepEqual(fromSpreadsheet.body, { accepted: 1, duplicates: 0, errors: 0, error_details: [] });
    const noTimestamp = await post('time,temperature_c\n2026-05-01T00:00:00Z,1\n');
    assert.equal(noTimestamp.status, 400);
    assert.equal(noTimestamp.headers.get('content-type'), 'application/problem+json');
    assert.match(noTimestamp.body.detail, /timestamp column/);
    const empty = await post('');
    assert.equal(empty.status, 400);
    const headerOnly = await post('timestamp,temperature_c\n');
    assert.equal(headerOnly.status, 400);
    assert.equal(await countReadings(env().db, 'fmt-csv-errors'), 3);
  });

  it('refuses a CSV quote never closed or opened inside a field with a 400 naming the line, storing nothing', async () => {
    const key = await stationWithKey(env(), 'fmt-csv-quotes');
    const post = (body: string) => postBatch(env(), key, body, { 'Content-Type': 'text/csv' });
    // Read leniently, the second reading would be stored as text inside the first one's firmware_version.
    const unclosed = await post('timestamp,firmware_version\n2021-03-26T00:00:00Z,"abc\n2021-03-26T00:00:01Z,x\n');
    assert.equal(unclosed.status, 400);
    assert.equal(unclosed.headers.get('content-type'), 'application/problem+json');
    assert.match(unclosed.body.detail, /never closed/);
    assert.match(unclosed.body.detail, /line 1\b/);
    const inside = await post('timestamp,firmware_version\n2021-03-26T00:00:00Z,ab"c\n');
    assert.equal(inside.status, 400);
    assert.match(inside.body.detail, /quote/i);
    assert.equal(await countReadings(env().db, 'fmt-csv-quotes'), 0);
    // Quoted as RFC 4180 quotes: a line break and a doubled quote inside a field are text.
    const quoted = await post('timestamp,firmware_version\n2021-03-26T00:00:00Z,"a\nb ""c"""\n');
    assert.deepEqual(quoted.body, { accepted: 1, duplicates: 0, errors: 0, error_details: [] });
    const [row] = await stored('fmt-csv-quotes');
    assert.equal(row!.firmware_version, 'a\nb "c"');
  });

  it('reads CSV rows whose line breaks are CRLF, LF and CR mixed in one body, each row once', async () => {
    const key = await stationWithKey(env(), 'fmt-csv-breaks');
    const result = await postBatch(env(), key, `timestamp,temperature_c\r\n${minute(0)},1\n${minute(1)},2\r\n${minute(2)},3\r${minute(3)},4`, { 'Content-Type': 'text/csv' });
    assert.deepEqual(result.body, { accepted: 4, duplicates: 0, errors: 0, error_details: [] });
    assert.deepEqual((await stored('fmt-csv-breaks')).map((r) => r.temperature_c), [1, 2, 3, 4]);
  });

  it('refuses CSV columns named __proto__ or constructor whole, as in JSON', async () => {
    const key = await stationWithKey(env(), 'fmt-csv-proto');
    for (const column of ['__proto__', 'constructor']) {
      const result = await postBatch(env(), key, `timestamp,${column}\n${minute(0)},1\n`, { 'Content-Type': 'text/csv' });
      assert.equal(result.status, 400, column);
      assert.match(result.body.detail, new RegExp(column));
    }
    assert.equal(await countReadings(env().db, 'fmt-csv-proto'), 0);
  });

  it('makes text that is not UTF-8 its reading\'s error in every format, storing the others unaltered', async () => {
    const key = await stationWithKey(env(), 'fmt-utf8');
    // A stray byte, an overlong '/', an encoded surrogate, a sequence cut short.
    const bad = [Buffer.from([0xff, 0xfe]), Buffer.from([0xc0, 0xaf]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0xe2, 0x82])];
    const good = 'caf\u00e9 \ufffd';
    const bodies: Record<string, (ts: string[], bytes: Buffer) => Buffer> = {
      'application/json': (ts, bytes) => Buffer.concat([Buffer.from(`{"station_id":"fmt-utf8","readings":[{"timestamp":"${ts[0]}","firmware_version":"${good}"},{"timestamp":"${ts[1]}","firmware_version":"a`), bytes, Buffer.from('b"}]}')]),
      'application/x-ndjson': (ts, bytes) => Buffer.concat([Buffer.from(`{"timestamp":"${ts[0]}","firmware_version":"${good}"}\n{"timestamp":"${ts[1]}","firmware_version":"a`), bytes, Buffer.from('b"}\n')]),
      'text/csv': (ts, bytes) => Buffer.concat([Buffer.from(`timestamp,firmware_version\n${ts[0]},${good}\n${ts[1]},a`), bytes, Buffer.from('b\n')]),
    };
    let i = 0;
    for (const [type, body] of Object.entries(bodies)) {
      for (const bytes of bad) {
        const ts = [minute(i++), minute(i++)];
        const response = await env().get('/api/v1/ingest/environmental/', { method: 'POST', headers: { 'Content-Type': type, Authorization: `Token ${key}` }, body: body(ts, bytes) });
        const result = (await response.json()) as { accepted: number; errors: number; error_details: { reason: string }[] };
        const what = `${type} ${bytes.toString('hex')}`;
        assert.equal(response.status, 201, what);
        assert.equal(result.accepted, 1, what);
        assert.equal(result.errors, 1, what);
        assert.match(result.error_details[0]!.reason, /not UTF-8/, what);
      }
    }
    // The good reading's text, a replacement character sent as such included, is stored as it was sent.
    const rows = await stored('fmt-utf8');
    assert.equal(rows.length, i / 2);
    for (const row of rows) assert.equal(row.firmware_version, good);
  });

  it('stores each number as JSON.parse reads its text, in pretty-printed JSON and in NDJSON', async () => {
    const texts = ['21.50', '1e2', '-1.5e+3', '0.1000000000000000055511151231257827', '-0', '999999999.9999999999', '0.000001', '-49.99999999999999999', '1100.0'];
    const readingText = (text: string, i: number) => `{ "timestamp" : "${minute(i)}",\n  "temperature_c" : ${text}, "humidity_rh": ${text}, "soil_temp": ${text.startsWith('-0') ? 1 : text} }`;
    const keys = { json: await stationWithKey(env(), 'fmt-num-json'), ndjson: await stationWithKey(env(), 'fmt-num-ndjson') };
    const json = await postBatch(env(), keys.json, `{\n "station_id": "fmt-num-json",\n "readings": [\n${texts.map(readingText).join(',\n')}\n ]\n}`);
    const nd = await postBatch(env(), keys.ndjson, texts.map((text, i) => readingText(text, i).replace('\n', ' ')).join('\r\n'), { 'Content-Type': 'application/x-ndjson' });
    for (const [stationId, result] of [['fmt-num-json', json], ['fmt-num-ndjson', nd]] as const) {
      assert.deepEqual(result.body, { accepted: texts.length, duplicates: 0, errors: 0, error_details: [] }, stationId);
      const rows = await stored(stationId);
      texts.forEach((text, i) => {
        const value = Number(text) === 0 ? 0 : Number(text);
        assert.ok(Object.is(rows[i]!.temperature_c, value), `${stationId} ${text}: ${rows[i]!.temperature_c}`);
        assert.ok(Object.is(rows[i]!.humidity_rh, value));
        // Inside both bounds (temperature -50..60, humidity 0..100) only from 0 to 60.
        assert.equal(rows[i]!.quality_flag, value < 0 || value > 60 ? 'suspect' : 'ok', `${stationId} ${text}`);
        assert.deepEqual(rows[i]!.module_data, { soil_temp: text.startsWith('-0') ? 1 : Number(text) });
      });
    }
  });

  it('holds NDJSON and CSV to the same reading limit (413) and refuses other types with a 415 naming the three', async () => {
    const key = await stationWithKey(env(), 'fmt-limits');
    const many = Array.from({ length: 10_001 }, (_, i) => `{"timestamp":"${minute(i)}"}`).join('\n');
    const tooMany = await postBatch(env(), key, many, { 'Content-Type': 'application/x-ndjson' });
    assert.equal(tooMany.status, 413);
    const other = await postBatch(env(), key, 'timestamp\n2026-05-01T00:00:00Z\n', { 'Content-Type': 'text/plain' });
    assert.equal(other.status, 415);
    assert.match(other.body.detail, /application\/json, application\/x-ndjson or text\/csv/);
    assert.equal(await countReadings(env().db, 'fmt-limits'), 0);
  });
});
