import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { issueKey, revokeKey, listKeys } from '../../../src/stations/keys.js';
import { ingestReadingSchema } from '../../../src/readings/ingest/schema.js';
import { fieldAliases, moduleChannels, numericFields } from '../../../src/readings/reading.js';
import { describeEngines, startTestApp } from '../../helpers/app.js';
import { assertRollupExact, flagFilters, periods } from '../../helpers/exactness.js';
import { assertAggregateApiExact } from '../../helpers/oracle.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { countReadings } from '../../helpers/readings.js';
import { testServer } from '../../helpers/server.js';
import { assertBelowWatermarks, daysAgo } from '../../helpers/rollups.js';

const storedRow = z.object({
  temperature_c: z.number().nullable(),
  humidity_rh: z.number().nullable(),
  pressure_hpa: z.number().nullable(),
  pm2_5: z.number().nullable(),
  quality_flag: z.string(),
  firmware_version: z.string().nullable(),
  module_data: z.record(z.unknown()).nullable(),
});

const minute = (i: number, base = '2026-05-01T00:00:00Z') => new Date(Date.parse(base) + i * 60_000).toISOString();

describe('ingest schema', () => {
  it('documents exactly the fields the row parser knows', () => {
    const documented = Object.keys(ingestReadingSchema.shape).sort();
    const parsed = ['timestamp', ...numericFields, ...Object.keys(fieldAliases), ...moduleChannels, 'firmware_version', 'module_data'].sort();
    assert.deepEqual(documented, parsed);
  });
});

describeEngines('POST /api/v1/ingest/environmental/', (env) => {
  const stored = async (stationId: string, ts: string) =>
    env().db.pool.one(sql.type(storedRow)`
      select temperature_c, humidity_rh, pressure_hpa, pm2_5, quality_flag, firmware_version, module_data
      from readings where station_id = ${stationId} and ts = ${ts}
    `);

  it('stores a batch, answers 201 with the counts, and is idempotent on re-send', async () => {
    const key = await stationWithKey(env(), 'in-basic');
    const readings = Array.from({ length: 100 }, (_, i) => ({ timestamp: minute(i), temperature_c: 10 + i / 10, humidity_rh: 50 }));
    const first = await postBatch(env(), key, { station_id: 'in-basic', readings });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(first.headers.get('access-control-allow-origin'), null, 'ingest does not advertise CORS');
    assert.deepEqual(first.body, { accepted: 100, duplicates: 0, errors: 0, error_details: [] });
    const again = await postBatch(env(), key, { station_id: 'in-basic', readings });
    assert.deepEqual(again.body, { accepted: 0, duplicates: 100, errors: 0, error_details: [] });
    assert.equal(await countReadings(env().db, 'in-basic'), 100);
  });

  it('counts duplicates inside one batch and stores the first of them', async () => {
    const key = await stationWithKey(env(), 'in-dupes');
    const ts = minute(0);
    const result = await postBatch(env(), key, {
      station_id: 'in-dupes',
      readings: [
        { timestamp: ts, temperature_c: 1 },
        { timestamp: '2026-05-01T02:00:00+02:00', temperature_c: 2 },
        { timestamp: '2026-05-01T00:00:00', temperature_c: 3 },
        { timestamp: minute(1), temperature_c: 4 },
      ],
    });
    assert.deepEqual(result.body, { accepted: 2, duplicates: 2, errors: 0, error_details: [] });
    assert.equal((await stored('in-dupes', ts)).temperature_c, 1);
  });

  it('assigns quality flags from the inclusive plausibility bounds', async () => {
    const key = await stationWithKey(env(), 'in-bounds');
    const cases: [Record<string, number | null>, string][] = [
      [{ temperature_c: 60 }, 'ok'], [{ temperature_c: 60.0001 }, 'suspect'],
      [{ temperature_c: -50 }, 'ok'], [{ temperature_c: -50.1 }, 'suspect'],
      [{ humidity_rh: 0 }, 'ok'], [{ humidity_rh: -0.1 }, 'suspect'],
      [{ humidity_rh: 100 }, 'ok'], [{ humidity_rh: 100.5 }, 'suspect'],
      [{ pressure_hpa: 300 }, 'ok'], [{ pressure_hpa: 299.9 }, 'suspect'],
      [{ pressure_hpa: 1100 }, 'ok'], [{ pressure_hpa: 1100.1 }, 'suspect'],
      [{ pm2_5: 0 }, 'ok'], [{ pm2_5: 1000 }, 'ok'], [{ pm2_5: 1000.1 }, 'suspect'], [{ pm2_5: -0.1 }, 'suspect'],
      [{ temperature_c: null, humidity_rh: null, pressure_hpa: null, pm2_5: null }, 'ok'],
      [{ pm10: 99999, co2_ppm: -5, uv_index: 40 }, 'ok'],
      [{ air_temp: 61 }, 'suspect'],
    ];
    const readings = cases.map(([values], i) => ({ timestamp: minute(i), ...values }));
    const result = await postBatch(env(), key, { station_id: 'in-bounds', readings });
    assert.equal(result.body.accepted, cases.length);
    for (const [i, [values, flag]] of cases.entries()) {
      assert.equal((await stored('in-bounds', minute(i))).quality_flag, flag, JSON.stringify(values));
    }
  });

  it('maps aliases, keeps soil channels and unknown keys in module_data, and rejects conflicting aliases', async () => {
    const key = await stationWithKey(env(), 'in-alias');
    const readings = [
      { timestamp: minute(0), air_temp: 12.5, air_hum: 40, pressure: 1001.5, soil_temp: 8.2, soil_moist: 0.31, firmware_version: 'fw-9' },
      { timestamp: minute(1), air_temp: 12.5, temperature_c: 12.5, wind_speed: 3.4, module_data: { board: 'v2' } },
      { timestamp: minute(2), air_temp: 12.5, temperature_c: 13 },
      { timestamp: minute(3), pressure: 1000, pressure_hpa: 999 },
    ];
    const result = await postBatch(env(), key, { station_id: 'in-alias', readings });
    assert.equal(result.status, 201);
    assert.deepEqual(result.body, {
      accepted: 2,
      duplicates: 0,
      errors: 2,
      error_details: [
        { index: 2, reason: 'air_temp and temperature_c disagree (12.5 and 13)' },
        { index: 3, reason: 'pressure and pressure_hpa disagree (1000 and 999)' },
      ],
    });
    assert.deepEqual(await stored('in-alias', minute(0)), {
      temperature_c: 12.5, humidity_rh: 40, pressure_hpa: 1001.5, pm2_5: null, quality_flag: 'ok', firmware_version: 'fw-9',
      module_data: { soil_temp: 8.2, soil_moist: 0.31 },
    });
    const second = await stored('in-alias', minute(1));
    assert.equal(second.temperature_c, 12.5);
    assert.deepEqual(second.module_data, { board: 'v2', wind_speed: 3.4 });
  });

  it('refuses a body with a __proto__ key as a whole, and stores nothing of it', async () => {
    const key = await stationWithKey(env(), 'in-proto');
    // Written as raw JSON: in an object literal '__proto__' would set the prototype instead of a key.
    const body = `{"station_id":"in-proto","readings":[{"timestamp":"${minute(0)}","temperature_c":1},` +
      `{"timestamp":"${minute(1)}","__proto__":{"polluted":true}}]}`;
    const result = await postBatch(env(), key, body);
    assert.equal(result.status, 400);
    assert.deepEqual(result.body, {
      type: 'urn:envmon:problem:bad-request', title: 'Bad Request', status: 400,
      detail: 'the request body is not accepted: keys named __proto__ or constructor.prototype are refused',
    });
    assert.equal(({} as { polluted?: boolean }).polluted, undefined);
    assert.equal(await countReadings(env().db, 'in-proto'), 0);
  });

  it('refuses a body with a constructor holding a prototype as a whole, and keeps a channel named constructor', async () => {
    const key = await stationWithKey(env(), 'in-ctor');
    const refused = 'the request body is not accepted: keys named __proto__ or constructor.prototype are refused';
    const bodies: [string, Record<string, string>][] = [
      [`{"station_id":"in-ctor","readings":[{"timestamp":"${minute(0)}","temperature_c":1},{"timestamp":"${minute(1)}","module_data":{"constructor":{"prototype":{"polluted":true}}}}]}`, {}],
      [`{"station_id":"in-ctor","readings":[{"timestamp":"${minute(0)}","\\u0063onstructor":{"prototype":1}}]}`, {}],
      [`{"timestamp":"${minute(0)}","temperature_c":1}\n{"timestamp":"${minute(1)}","constructor":{"prototype":{}}}\n`, { 'Content-Type': 'application/x-ndjson' }],
    ];
    for (const [body, headers] of bodies) {
      const result = await postBatch(env(), key, body, headers);
      assert.equal(result.status, 400, body);
      assert.equal(result.body.detail, refused);
    }
    assert.equal(await countReadings(env().db, 'in-ctor'), 0);
    // Without a prototype inside, constructor is a channel like any other.
    const plain = await postBatch(env(), key, `{"station_id":"in-ctor","readings":[{"timestamp":"${minute(2)}","constructor":7}]}`);
    assert.deepEqual(plain.body, { accepted: 1, duplicates: 0, errors: 0, error_details: [] });
    const stored = await env().db.pool.oneFirst(sql.type(z.object({ module_data: z.unknown() }))`select module_data from readings where station_id = 'in-ctor'`);
    assert.deepEqual(stored, { constructor: 7 });
  });

  it('skips rows that cannot be stored, counts them with reasons, and stores the rest', async () => {
    const key = await stationWithKey(env(), 'in-errors');
    const bad = [
      { temperature_c: 1 },
      { timestamp: 'yesterday', temperature_c: 1 },
      { timestamp: '2026-02-30T00:00:00Z' },
      { timestamp: minute(3), temperature_c: '12.5' },
      { timestamp: minute(4), humidity_rh: true },
      { timestamp: minute(5), firmware_version: 7 },
      { timestamp: minute(6), module_data: [1, 2] },
      'not an object',
      null,
      { timestamp: 1_700_000_000 },
    ];
    const good = [{ timestamp: minute(10), temperature_c: 5 }, { timestamp: '2026-05-01 00:11', temperature_c: 6 }];
    const result = await postBatch(env(), key, { station_id: 'in-errors', readings: [...bad, ...good] });
    assert.equal(result.status, 201);
    assert.equal(result.body.accepted, 2);
    assert.equal(result.body.errors, bad.length);
    assert.deepEqual(result.body.error_details, [
      { index: 0, reason: 'timestamp is required' },
      { index: 1, reason: "timestamp 'yesterday' is not an ISO 8601 date-time" },
      { index: 2, reason: "timestamp '2026-02-30T00:00:00Z' is not a valid date-time" },
      { index: 3, reason: 'temperature_c must be a number or null' },
      { index: 4, reason: 'humidity_rh must be a number or null' },
      { index: 5, reason: 'firmware_version must be a string or null' },
      { index: 6, reason: 'module_data must be an object or null' },
      { index: 7, reason: 'reading must be a JSON object' },
      { index: 8, reason: 'reading must be a JSON object' },
      { index: 9, reason: 'timestamp must be a string' },
    ]);
    assert.equal((await stored('in-errors', '2026-05-01T00:11:00.000Z')).temperature_c, 6);
  });

  it('caps error_details at 100 entries but counts every error', async () => {
    const key = await stationWithKey(env(), 'in-many-errors');
    const readings = Array.from({ length: 150 }, () => ({ temperature_c: 1 }));
    const result = await postBatch(env(), key, { station_id: 'in-many-errors', readings });
    assert.equal(result.body.errors, 150);
    assert.equal(result.body.error_details.length, 100);
    assert.equal(result.body.error_details[99].index, 99);
  });

  it('answers 401 with WWW-Authenticate when no key is sent, 403 for a wrong or revoked key', async () => {
    const key = await stationWithKey(env(), 'in-auth');
    const body = { station_id: 'in-auth', readings: [{ timestamp: minute(0), temperature_c: 1 }] };
    const missing = await postBatch(env(), null, body);
    assert.equal(missing.status, 401);
    assert.equal(missing.headers.get('www-authenticate'), 'Token');
    assert.equal(missing.headers.get('content-type'), 'application/problem+json');
    assert.deepEqual(missing.body, {
      type: 'urn:envmon:problem:unauthorized', title: 'Unauthorized', status: 401,
      detail: 'this route needs a station API key: send Authorization: Token <key>',
    });
    const wrongScheme = await postBatch(env(), null, body, { Authorization: `Bearer ${key}` });
    assert.equal(wrongScheme.status, 401);
    assert.equal(wrongScheme.headers.get('www-authenticate'), 'Token');
    // A placeholder copied as printed is told what goes there, not shown the template again.
    const placeholder = await postBatch(env(), null, body, { Authorization: 'Token <the key>' });
    assert.equal(placeholder.status, 401);
    assert.match((placeholder.body as { detail: string }).detail, /followed by the key that `envmon keys issue` printed/);

    const forged = await postBatch(env(), `${key.slice(0, -4)}AAAA`, body);
    assert.equal(forged.status, 403);
    assert.deepEqual(forged.body, {
      type: 'urn:envmon:problem:forbidden', title: 'Forbidden', status: 403,
      detail: 'the API key is not valid: it is unknown or has been revoked',
    });
    assert.equal((await postBatch(env(), 'em_unknown', body)).status, 403);

    const rotated = await issueKey(env().db.pool, 'in-auth');
    const [old] = await listKeys(env().db.pool, 'in-auth');
    await revokeKey(env().db.pool, old!.key_id);
    assert.equal((await postBatch(env(), key, body)).status, 403, 'a revoked key stops working at once');
    assert.equal((await postBatch(env(), rotated.key, body)).status, 201, 'the rotated key works');
    assert.equal(await countReadings(env().db, 'in-auth'), 1);
  });

  it('lets a key write only its own station: 400 for another station, 403 for an unknown one', async () => {
    const key = await stationWithKey(env(), 'in-own');
    await stationWithKey(env(), 'in-other');
    const readings = [{ timestamp: minute(0), temperature_c: 1 }];
    const other = await postBatch(env(), key, { station_id: 'in-other', readings });
    assert.equal(other.status, 400);
    assert.deepEqual(other.body, {
      type: 'urn:envmon:problem:bad-request', title: 'Bad Request', status: 400,
      detail: "station_id 'in-other' does not match the key, which belongs to station 'in-own'",
      errors: [{ param: 'station_id', message: 'must be in-own, the station that owns the key' }],
    });
    const unknown = await postBatch(env(), key, { station_id: 'nowhere-9', readings });
    assert.equal(unknown.status, 403);
    assert.equal(unknown.body.detail, "station 'nowhere-9' is unknown");
    assert.equal(await countReadings(env().db, 'in-other'), 0);
  });

  it('answers 400 for an empty list, a missing field and a body that is not JSON; 415 for another type', async () => {
    const key = await stationWithKey(env(), 'in-shape');
    const empty = await postBatch(env(), key, { station_id: 'in-shape', readings: [] });
    assert.equal(empty.status, 400);
    assert.deepEqual(empty.body.errors, [{ param: 'readings', message: 'must not be empty' }]);
    const missing = await postBatch(env(), key, { readings: [{}] });
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.errors, [{ param: 'station_id', message: 'is required' }]);
    const array = await postBatch(env(), key, [1, 2]);
    assert.equal(array.status, 400);
    assert.deepEqual(array.body.errors, [{ param: 'body', message: 'must be an object' }]);
    const broken = await postBatch(env(), key, '{"station_id": "in-shape", "readings": [');
    assert.equal(broken.status, 400);
    assert.equal(broken.headers.get('content-type'), 'application/problem+json');
    assert.equal(broken.body.detail, 'the request body is not valid JSON');
    const form = await postBatch(env(), key, 'station_id=in-shape', { 'Content-Type': 'application/x-www-form-urlencoded' });
    assert.equal(form.status, 415);
    assert.equal(form.body.detail, 'the request body must be application/json, application/x-ndjson or text/csv, not application/x-www-form-urlencoded');
  });

  it('answers 413 past the byte or the reading limit, and stores nothing of that batch', async () => {
    const key = await stationWithKey(env(), 'in-limits');
    const tooMany = Array.from({ length: 10_001 }, (_, i) => ({ timestamp: minute(i) }));
    const many = await postBatch(env(), key, { station_id: 'in-limits', readings: tooMany });
    assert.equal(many.status, 413);
    assert.equal(many.body.detail, 'a batch holds at most 10000 readings; this one has 10001: split it');
    const padding = 'x'.repeat(5 * 1024 * 1024);
    const big = await postBatch(env(), key, { station_id: 'in-limits', readings: [{ timestamp: minute(0), note: padding }] });
    assert.equal(big.status, 413);
    assert.equal(big.body.type, 'urn:envmon:problem:payload-too-large');
    assert.equal(await countReadings(env().db, 'in-limits'), 0);
  });

  it('takes concurrent overlapping batches from several clients with no duplicate and no error', async () => {
    const key = await stationWithKey(env(), 'in-race');
    const base = daysAgo(10);
    const all = Array.from({ length: 3000 }, (_, i) => ({ timestamp: minute(i, base), temperature_c: (i % 70) - 5, pm2_5: i % 1100 }));
    const windows = Array.from({ length: 5 }, (_, i) => all.slice(i * 500, i * 500 + 1000));
    // Half of the span is materialised first, so that on timescale the refreshes overlap too.
    await postBatch(env(), key, { station_id: 'in-race', readings: all.slice(0, 1500).filter((_, i) => i % 2 === 0) });
    await env().db.rollups.refresh();
    if (env().engine === 'timescale') await assertBelowWatermarks(env().db.pool, all[1400]!.timestamp);
    const results = await Promise.all(windows.map((readings) => postBatch(env(), key, { station_id: 'in-race', readings })));
    assert.deepEqual(results.map((r) => r.status), [201, 201, 201, 201, 201]);
    const accepted = results.reduce((s, r) => s + r.body.accepted, 0);
    const duplicates = results.reduce((s, r) => s + r.body.duplicates, 0);
    assert.equal(accepted, 3000 - 750);
    assert.equal(duplicates, 5000 - accepted);
    assert.equal(await countReadings(env().db, 'in-race'), 3000);
    assert.ok((await assertAggregateApiExact(env().origin, env().db.pool, 'in-race')) > 0);
    await env().db.rollups.refresh();
    for (const period of periods) await assertRollupExact(env().db, 'in-race', period, ['ok', 'suspect', 'invalid']);
  });

  it('stores each station its own readings, value for value, while large batches of several stations arrive at once', async () => {
    // Batches large enough that each body and its rows outgrow their first buffers, in every format's path
    // (read as it arrives, and whole after a repeat), four stations at a time: no byte of one may end up in another.
    const stations = ['in-many-0', 'in-many-1', 'in-many-2', 'in-many-3'];
    const keys = await Promise.all(stations.map((id) => stationWithKey(env(), id)));
    const base = Date.parse(daysAgo(20));
    const sent = stations.map((_, s) => Array.from({ length: 15_000 }, (_, i) => ({
      timestamp: new Date(base + i * 60_000).toISOString(),
      temperature_c: s * 10 + (i % 997) / 100, humidity_rh: (i * 7 + s) % 100, pm2_5: i % 3 === s % 3 ? null : i / 8,
      firmware_version: `fw-${s}`, module_data: { board: `b${s}`, seq: i },
    })));
    const results = await Promise.all(stations.map(async (id, s) => {
      const answers = [];
      for (let b = 0; b < 3; b++) {
        const readings = sent[s]!.slice(b * 5_000, (b + 1) * 5_000);
        // The middle batch repeats its predecessor's last reading: stored whole, through the staging table.
        const batch = b === 1 ? [sent[s]![4_999]!, ...readings] : readings;
        answers.push((await postBatch(env(), keys[s]!, { station_id: id, readings: batch })).body);
      }
      return answers;
    }));
    assert.deepEqual(results, stations.map(() => [
      { accepted: 5_000, duplicates: 0, errors: 0, error_details: [] },
      { accepted: 5_000, duplicates: 1, errors: 0, error_details: [] },
      { accepted: 5_000, duplicates: 0, errors: 0, error_details: [] },
    ]));
    const row = z.object({
      station_id: z.string(), ms: z.number(), temperature_c: z.number(), humidity_rh: z.number(), pm2_5: z.number().nullable(),
      firmware_version: z.string(), module_data: z.object({ board: z.string(), seq: z.number() }),
    });
    const rows = await env().db.pool.any(sql.type(row)`
      select station_id, (extract(epoch from ts) * 1000)::float8 as ms, temperature_c, humidity_rh, pm2_5, firmware_version, module_data
      from readings where station_id = any(${sql.array(stations, 'text')}) order by station_id, ts`);
    assert.deepEqual(rows, stations.flatMap((id, s) => sent[s]!.map(({ timestamp, ...values }) => ({ station_id: id, ms: Date.parse(timestamp), ...values }))));
  });

  it('has every accepted reading in every aggregate read after the 201, live and backfill alike, and in the rollups once refreshed', async () => {
    const key = await stationWithKey(env(), 'in-ryw');
    // Live: the last ten minutes, above every watermark.
    const recent = Array.from({ length: 10 }, (_, i) => ({ timestamp: new Date(Date.now() - (10 - i) * 60_000).toISOString(), temperature_c: i % 40, pm2_5: 1000 + (i % 3) }));
    assert.equal((await postBatch(env(), key, { station_id: 'in-ryw', readings: recent })).status, 201);
    for (const period of periods) await assertRollupExact(env().db, 'in-ryw', period, ['ok']);
    // History, materialised, then a backfill into the same buckets: placed below the watermarks, and checked to be.
    const base = daysAgo(40);
    const old = Array.from({ length: 300 }, (_, i) => ({ timestamp: minute(i * 2, base), temperature_c: 3 }));
    const backfill = Array.from({ length: 300 }, (_, i) => ({ timestamp: minute(i * 2 + 1, base), temperature_c: 70 }));
    await postBatch(env(), key, { station_id: 'in-ryw', readings: old });
    await env().db.rollups.refresh();
    if (env().engine === 'timescale') {
      await assertBelowWatermarks(env().db.pool, backfill.at(-1)!.timestamp, ['readings_hourly', 'readings_daily', 'readings_weekly', 'readings_monthly']);
    }
    const result = await postBatch(env(), key, { station_id: 'in-ryw', readings: backfill });
    assert.equal(result.body.accepted, 300);
    // What a client sees at once, on this instance or any other; the rollups themselves after their refresh.
    assert.ok((await assertAggregateApiExact(env().origin, env().db.pool, 'in-ryw')) > 0);
    await env().db.rollups.refresh();
    for (const period of periods) {
      for (const flags of flagFilters) await assertRollupExact(env().db, 'in-ryw', period, flags);
    }
  });
});

describe('ingest across a server restart', () => {
  for (const engine of testServer().engines) {
    it(`re-sending a batch to a restarted server stores nothing twice [${engine}]`, async () => {
      const first = await startTestApp(engine);
      let second;
      try {
        const key = await stationWithKey(first, 'in-restart');
        const readings = Array.from({ length: 200 }, (_, i) => ({ timestamp: minute(i), temperature_c: 7 }));
        assert.equal((await postBatch(first, key, { station_id: 'in-restart', readings })).body.accepted, 200);
        // A second app on the same database, as after a restart; the first is stopped.
        const { createDb } = await import('../../../src/db/pool.js');
        const { createApp } = await import('../../../src/app.js');
        const { listen } = await import('../../../src/http/server.js');
        const { pino } = await import('pino');
        const db = await createDb(first.databaseUrl, engine, { poolSize: 2, statementTimeoutMs: 10_000 });
        const running = await listen(createApp({ config: first.config, db, log: pino({ level: 'silent' }) }).app, 0, '127.0.0.1');
        second = { running, db };
        const response = await fetch(`${running.url}/api/v1/ingest/environmental/`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
          body: JSON.stringify({ station_id: 'in-restart', readings }),
        });
        assert.equal(response.status, 201);
        assert.deepEqual(await response.json(), { accepted: 0, duplicates: 200, errors: 0, error_details: [] });
      } finally {
        if (second) {
          await second.running.close();
          await second.db.close();
        }
        await first.close();
      }
    });
  }
});
