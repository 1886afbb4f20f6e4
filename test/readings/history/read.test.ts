import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { readCurrent } from '../../../src/db/rollupsCurrent.js';
import { withLiterals } from '../../../src/db/copyOut.js';
import { historicalQuery } from '../../../src/readings/history/historical.js';
import { compareInterval, compareQuery, compareStations } from '../../../src/readings/aggregates/queries.js';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { storeReadings } from '../../../src/readings/ingest/store.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { periods, type Period } from '../../helpers/exactness.js';
import { exactStatistics } from '../../helpers/exactStatistics.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { allMetrics, assertResult, defaultFields, metricFields, rawAggregate } from '../../helpers/oracle.js';
import { addStation, makeReadings } from '../../helpers/readings.js';
import { runCli } from '../../helpers/cli.js';

// Times relative to one anchor per test, taken at its start: a test that writes a reading at "a minute
// ago" and later expects it must not see the clock's minute turn in between.
let anchor = Date.now();
const anchorNow = () => {
  anchor = Math.floor(Date.now() / 60_000) * 60_000;
};
const isoMinutesAgo = (minutes: number) => new Date(anchor - minutes * 60_000).toISOString();

describeEngines('GET /data/latest/ and /data/historical/', (env) => {
  beforeEach(anchorNow);
  it('gives the latest reading with its module_data, 400 without station, 404 for unknown or empty stations', async () => {
    const key = await stationWithKey(env(), 'rd-latest');
    await postBatch(env(), key, {
      station_id: 'rd-latest',
      readings: [
        { timestamp: isoMinutesAgo(2), temperature_c: 1 },
        { timestamp: isoMinutesAgo(1), air_temp: 2.5, soil_moist: 0.4, wind_dir: 'NW', firmware_version: 'fw-3' },
      ],
    });
    const { status, body } = await env().getJson('/api/v1/data/latest/?station=rd-latest');
    assert.equal(status, 200);
    assert.deepEqual(body, {
      timestamp: isoMinutesAgo(1), temperature_c: 2.5, humidity_rh: null, pressure_hpa: null, altitude_m: null, pm1_0: null,
      pm2_5: null, pm10: null, co2_ppm: null, co_ppm: null, uv_index: null, quality_flag: 'ok', firmware_version: 'fw-3',
      module_data: { soil_moist: 0.4, wind_dir: 'NW' },
    });
    // A backfill of older readings and a re-sent batch leave the latest reading where it is.
    await postBatch(env(), key, { station_id: 'rd-latest', readings: [{ timestamp: isoMinutesAgo(600), temperature_c: 9 }] });
    await postBatch(env(), key, { station_id: 'rd-latest', readings: [{ timestamp: isoMinutesAgo(2), temperature_c: 1 }] });
    assert.equal((await env().getJson('/api/v1/data/latest/?station=rd-latest')).body.timestamp, isoMinutesAgo(1));
    const missing = await env().getJson('/api/v1/data/latest/');
    assert.equal(missing.status, 400);
    assert.deepEqual(missing.body.errors, [{ param: 'station', message: 'is required' }]);
    const unknown = await env().getJson('/api/v1/data/latest/?station=rd-nowhere');
    assert.deepEqual(unknown.body, { type: 'urn:envmon:problem:not-found', title: 'Not Found', status: 404, detail: "station 'rd-nowhere' is unknown" });
    await addStation(env().db, 'rd-empty');
    const empty = await env().getJson('/api/v1/data/latest/?station=rd-empty');
    assert.equal(empty.status, 404);
    assert.equal(empty.body.detail, "station 'rd-empty' has no readings yet");
  });

  it('gives the last hours of readings oldest first, clamps hours, filters by quality', async () => {
    await addStation(env().db, 'rd-hist');
    // One reading every 30 minutes over 40 days; every fifth one suspect.
    const readings = Array.from({ length: 40 * 48 }, (_, i) => {
      const values = { temperature_c: i % 5 === 0 ? 75 : 10 };
      return { ...makeReadings(1, isoMinutesAgo(i * 30 + 1), 1)[0]!, ...values, quality_flag: i % 5 === 0 ? ('suspect' as const) : ('ok' as const) };
    });
    await storeReadings(env().db, 'rd-hist', readings);
    const day = await env().getJson('/api/v1/data/historical/?station=rd-hist');
    assert.equal(day.status, 200);
    assert.equal(day.body.station, 'rd-hist');
    assert.equal(day.body.hours, 24);
    assert.equal(day.body.count, 48);
    assert.equal(day.body.readings.length, 48);
    const times = day.body.readings.map((r: { timestamp: string }) => r.timestamp);
    assert.deepEqual(times, [...times].sort());
    assert.equal(times.at(-1), isoMinutesAgo(1));
    for (const [hours, expectedHours, count] of [['0', 1, 2], ['-3', 1, 2], ['9999', 720, 1440], ['720', 720, 1440], ['2', 2, 4]] as const) {
      const { body } = await env().getJson(`/api/v1/data/historical/?station=rd-hist&hours=${hours}`);
      assert.equal(body.hours, expectedHours, `hours=${hours}`);
      assert.equal(body.count, count, `hours=${hours}`);
    }
    const suspect = await env().getJson('/api/v1/data/historical/?station=rd-hist&quality=suspect');
    assert.ok(suspect.body.readings.every((r: { quality_flag: string }) => r.quality_flag === 'suspect'));
    assert.equal(suspect.body.count, 10);
    const bad = await env().getJson('/api/v1/data/historical/?station=rd-hist&hours=1.5&quality=good');
    assert.equal(bad.status, 400);
    assert.deepEqual(bad.body.errors, [
      { param: 'hours', message: 'must be a whole number' },
      { param: 'quality', message: 'must be one of ok, suspect, invalid' },
    ]);
    const none = await env().getJson('/api/v1/data/historical/');
    assert.equal(none.status, 400, 'no DEFAULT_STATION is set');
    assert.deepEqual(none.body.errors, [{ param: 'station', message: 'is required' }]);
  });

  it('plans a history only over the chunks its window reaches (timescale)', async function () {
    if (env().engine !== 'timescale') this.skip();
    await addWeeksOfHours(env(), 'rd-chunks');
    const client = await env().db.readPool.connect();
    try {
      assertPlansItsWindow((await client.query(`explain ${withLiterals(client, historicalQuery({ stationId: 'rd-chunks', hours: 24 }))}`)).rows, await chunkCount(env()));
    } finally {
      client.release();
    }
    const { body } = await env().getJson('/api/v1/data/historical/?station=rd-chunks&hours=24');
    assert.equal(body.count, 23);
  });
});

describeEngines('default station', (env) => {
  beforeEach(anchorNow);
  it('uses DEFAULT_STATION where api.md allows a default, never for latest', async () => {
    await addStation(env().db, 'home-01');
    await storeReadings(env().db, 'home-01', makeReadings(3, isoMinutesAgo(10), 1));
    const historical = await env().getJson('/api/v1/data/historical/');
    assert.equal(historical.body.station, 'home-01');
    assert.equal(historical.body.count, 3);
    assert.equal((await env().getJson('/api/v1/data/aggregate/')).body.station, 'home-01');
    assert.equal((await env().get('/api/v1/data/download/')).status, 200);
    assert.equal((await env().getJson('/api/v1/data/latest/')).status, 400);
  });
}, { DEFAULT_STATION: 'home-01' });

describeEngines('GET /data/aggregate/', (env) => {
  const station = 'agg-01';
  // Seven weeks every 7 minutes across a month boundary, with suspect values and, later, an invalid range.
  before(async () => {
    await addStation(env().db, station);
    const all = makeReadings(7 * 1440, '2026-01-19T03:17:00Z', 7, 5);
    for (let i = 0; i < all.length; i += 2500) await storeReadings(env().db, station, all.slice(i, i + 2500));
  });

  /** The oracle: a GROUP BY over the raw readings with the same date filter and UTC buckets. */
  const oracle = (period: Period, quality?: string, from?: string, to?: string) => rawAggregate(env().db.pool, station, period, quality, { from, to });

  const compare = async (period: Period, quality?: string, from?: string, to?: string, metrics?: readonly string[]) => {
    const params = new URLSearchParams({
      station, period, ...(quality ? { quality } : {}), ...(from ? { from_date: from } : {}), ...(to ? { to_date: to } : {}),
      ...(metrics ? { metrics: metrics.join(',') } : {}),
    });
    const { status, body } = await env().getJson(`/api/v1/data/aggregate/?${params}`);
    assert.equal(status, 200);
    const expected = await oracle(period, quality, from, to);
    const what = `${period} ${quality ?? 'all'} ${from ?? ''}..${to ?? ''} ${metrics?.join('+') ?? 'default'}`;
    assert.equal(body.station, station);
    assert.equal(body.period, period);
    assert.equal(body.count, expected.length, what);
    assert.deepEqual(body.results.map((r: { period_start: string }) => r.period_start), expected.map((r) => r.period_start), what);
    const fields = metrics ? metricFields(metrics) : defaultFields;
    expected.forEach((e, i) => {
      assert.deepEqual(Object.keys(body.results[i]), ['period_start', 'count', ...fields, 'expected', 'coverage_pct'], `${what}: fields in order`);
      assertResult(body.results[i], e, fields, `${what} ${e.period_start}`);
    });
    return body;
  };

  it('equals a GROUP BY over the readings for every period and quality filter, every metric, as written and once materialised', async () => {
    for (const state of ['written', 'materialised']) {
      if (state === 'materialised') await env().db.rollups.refresh();
      for (const period of periods) {
        for (const quality of [undefined, 'ok', 'suspect', 'invalid']) {
          await compare(period, quality);
          await compare(period, quality, undefined, undefined, allMetrics);
        }
      }
    }
  });

  it('gives the metrics asked for, each with count, mean, min, max and sd, in the rollups\' order whatever the order asked', async () => {
    const body = await compare('day', undefined, undefined, undefined, ['humidity_rh', 'uv_index']);
    const same = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=day&metrics=${encodeURIComponent(' uv_index , humidity_rh,uv_index')}`);
    assert.deepEqual(same.body, body);
    for (const [metrics, message] of [
      ['', 'must be comma-separated metric names from temperature_c, humidity_rh, pressure_hpa, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index'],
      ['temperature_c,,pm10', 'must be comma-separated metric names from temperature_c, humidity_rh, pressure_hpa, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index'],
      ['altitude_m', 'must be comma-separated metric names from temperature_c, humidity_rh, pressure_hpa, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index'],
    ]) {
      const refused = await env().getJson(`/api/v1/data/aggregate/?station=${station}&metrics=${encodeURIComponent(metrics!)}`);
      assert.equal(refused.status, 400, metrics);
      assert.deepEqual(refused.body.errors, [{ param: 'metrics', message }], metrics);
    }
  });

  it('gives coverage against the station\'s interval, and follows an operator\'s new interval at once', async () => {
    // The readings come every 7 minutes: against the default minute a full hour is 8 or 9 of 60.
    const minute = await compare('hour', undefined, '2026-02-01', '2026-02-01');
    assert.ok(minute.results.every((r: { expected: number; coverage_pct: number }) => r.expected === 60 && r.coverage_pct < 16), 'a minute expected');
    const result = await runCli(['stations', 'add', station, '--name', 'Aggregates', '--location-name', 'Test', '--altitude', '100', '--interval-seconds', '420'], { DATABASE_URL: env().databaseUrl });
    assert.equal(result.code, 0, result.stderr);
    const sevenMinutes = await compare('hour', undefined, '2026-02-01', '2026-02-01');
    assert.ok(sevenMinutes.results.every((r: { expected: number; coverage_pct: number }) => r.expected === 9 && r.coverage_pct >= 88.8), 'seven minutes expected');
    for (const period of periods) await compare(period, 'ok', '2026-01-25', '2026-02-14');
    // Another station field given without --interval-seconds keeps the interval.
    assert.equal((await runCli(['stations', 'add', station, '--name', 'Aggregates', '--location-name', 'Test', '--altitude', '101'], { DATABASE_URL: env().databaseUrl })).code, 0);
    await compare('day');
  });

  it('rounds coverage to one decimal half up, as the oracle does, for every output', async () => {
    // One reading every 225 s is 16 an hour: 1, 3 and 5 readings are 6.25, 18.75 and 31.25 per cent exactly.
    const id = 'rd-coverage-half';
    const key = await stationWithKey(env(), id);
    assert.equal((await runCli(['stations', 'add', id, '--name', 'Half', '--location-name', 'Test', '--altitude', '1', '--interval-seconds', '225'], { DATABASE_URL: env().databaseUrl })).code, 0);
    const readings = [1, 3, 5].flatMap((n, hour) => Array.from({ length: n }, (_, i) => ({
      timestamp: new Date(Date.UTC(2026, 0, 5, hour, i)).toISOString(), temperature_c: 20, humidity_rh: 50, pressure_hpa: 1000,
    })));
    assert.equal((await postBatch(env(), key, { station_id: id, readings })).status, 201);
    const { body } = await env().getJson(`/api/v1/data/aggregate/?station=${id}&period=hour`);
    assert.deepEqual(body.results.map((r: { expected: number; coverage_pct: number }) => [r.expected, r.coverage_pct]), [[16, 6.3], [16, 18.8], [16, 31.3]]);
    const csv = (await (await env().get(`/api/v1/data/aggregate/?station=${id}&period=hour&output=csv`)).text()).split('\n').filter((l) => /^\d/.test(l));
    assert.deepEqual(csv.map((line) => line.split(',').slice(-2).join(',')), ['16,6.3', '16,18.8', '16,31.3']);
  });

  it('starts weeks on Monday and months on the 1st, in UTC', async () => {
    const weeks = await compare('week');
    for (const r of weeks.results) assert.equal(new Date(r.period_start).getUTCDay(), 1, r.period_start);
    const months = await compare('month');
    assert.deepEqual(months.results.map((r: { period_start: string }) => r.period_start), ['2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z']);
  });

  it('takes inclusive date ranges, cutting weeks and months at the range like the GROUP BY does', async () => {
    const ranges: [string | undefined, string | undefined][] = [
      ['2026-01-21', '2026-02-11'], ['2026-02-01', '2026-02-28'], ['2026-01-28', undefined], [undefined, '2026-02-04'], ['2026-02-05', '2026-02-05'],
    ];
    for (const [from, to] of ranges) {
      for (const period of periods) {
        for (const quality of [undefined, 'ok']) await compare(period, quality, from, to);
        await compare(period, 'suspect', from, to, allMetrics);
      }
    }
    const one = await compare('day', undefined, '2026-02-05', '2026-02-05');
    assert.equal(one.count, 1);
    assert.equal(one.results[0].period_start, '2026-02-05T00:00:00.000Z');
  });

  it('follows an operator flag override at once', async () => {
    await env().db.rollups.refresh();
    await recordOverride(env().db, { stationId: station, from: '2026-02-02T00:00:00.000Z', to: '2026-02-09T11:59:59.999Z', flag: 'invalid', reason: 'test' });
    for (const period of periods) {
      for (const quality of [undefined, 'ok', 'invalid']) await compare(period, quality);
    }
    const invalid = await compare('week', 'invalid');
    assert.ok(invalid.results.length >= 1);
  });

  it('gives CSV with the documented columns and the same rows as JSON', async () => {
    const json = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=day`);
    const response = await env().get(`/api/v1/data/aggregate/?station=${station}&period=day&output=csv`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.equal(response.headers.get('content-disposition'), `attachment; filename="envmon_${station}_start_latest_daily.csv"`);
    assert.equal(response.headers.get('link'), '<https://creativecommons.org/licenses/by/4.0/>; rel="license"');
    const cite = response.headers.get('x-attribution') ?? '';
    assert.match(cite, new RegExp(`^envmon environmental monitoring network, station ${station}, daily aggregates of readings full history, retrieved \\d{4}-\\d{2}-\\d{2} from http://envmon\\.test/api/v1/data/aggregate/\\?station=${station}&period=day\\. Licensed CC BY 4\\.0\\.$`));
    const all = (await response.text()).trimEnd().split('\n');
    const comments = all.filter((line) => line.startsWith('# '));
    assert.deepEqual(comments, [
      '# Data licensed under Creative Commons Attribution 4.0 International (CC BY 4.0): https://creativecommons.org/licenses/by/4.0/',
      `# Cite as: ${cite}`,
      '# Timestamps are UTC. Empty fields are missing values.',
    ]);
    assert.deepEqual(all.slice(0, 3), comments, 'the comment lines open the file');
    const lines = all.slice(3);
    assert.equal(lines[0], 'period_start,count,temperature_c_mean,temperature_c_min,temperature_c_max,humidity_rh_mean,pressure_hpa_mean,pm2_5_mean,' +
      'temperature_c_sd,humidity_rh_sd,pressure_hpa_sd,pm2_5_sd,expected,coverage_pct');
    assert.equal(lines.length - 1, json.body.count);
    const first = json.body.results[0];
    const ranged = await env().get(`/api/v1/data/aggregate/?station=${station}&period=week&from_date=2026-02-02&to_date=2026-02-15&output=csv`);
    assert.equal(ranged.headers.get('content-disposition'), `attachment; filename="envmon_${station}_2026-02-02_2026-02-15_weekly.csv"`);
    assert.match(ranged.headers.get('x-attribution') ?? '', / weekly aggregates of readings from 2026-02-02 to 2026-02-15, /);
    assert.equal(lines[1], Object.values(first).map((v) => v ?? '').join(','));
    // With metrics, the same columns as the JSON's fields.
    const some = await env().get(`/api/v1/data/aggregate/?station=${station}&period=month&metrics=pm10,co_ppm&output=csv`);
    const someJson = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=month&metrics=pm10,co_ppm`);
    const someLines = (await some.text()).trimEnd().split('\n').filter((line) => !line.startsWith('# '));
    assert.equal(someLines[0], ['period_start', 'count', ...metricFields(['pm10', 'co_ppm']), 'expected', 'coverage_pct'].join(','));
    assert.deepEqual(someLines.slice(1), someJson.body.results.map((r: Record<string, unknown>) => Object.values(r).map((v) => v ?? '').join(',')));
  });

  it('answers every bad parameter with a 400 naming it, and an unknown station with 404', async () => {
    const cases: [string, { param: string; message: string }[]][] = [
      ['period=year', [{ param: 'period', message: 'must be one of hour, day, week, month' }]],
      ['from_date=2026-02-30', [{ param: 'from_date', message: 'must be a date that exists, as YYYY-MM-DD' }]],
      ['to_date=02/01/2026', [{ param: 'to_date', message: 'must be a date as YYYY-MM-DD' }]],
      ['from_date=2026-02-10&to_date=2026-02-01', [{ param: 'from_date', message: 'must not be after to_date' }]],
      ['output=xml&quality=great', [{ param: 'quality', message: 'must be one of ok, suspect, invalid' }, { param: 'output', message: 'must be one of json, csv, parquet' }]],
    ];
    for (const [query, errors] of cases) {
      const { status, body } = await env().getJson(`/api/v1/data/aggregate/?station=${station}&${query}`);
      assert.equal(status, 400, query);
      assert.deepEqual(body.errors, errors, query);
      assert.equal(body.type, 'urn:envmon:problem:invalid-parameters');
    }
    assert.equal((await env().getJson('/api/v1/data/aggregate/?station=agg-nowhere')).status, 404);
  });
});

describeEngines('GET /data/compare/', (env) => {
  beforeEach(anchorNow);
  it('chooses the bucket width from hours', async () => {
    const expected: [number, number][] = [[1, 60], [12, 60], [13, 300], [60, 300], [61, 900], [180, 900], [181, 3600], [720, 3600]];
    await addStation(env().db, 'cmp-w');
    for (const [hours, seconds] of expected) {
      const { body } = await env().getJson(`/api/v1/data/compare/?stations=cmp-w&hours=${hours}`);
      assert.equal(body.interval_seconds, seconds, `hours=${hours}`);
      assert.equal(body.timestamps.length, Math.ceil((hours * 3600) / seconds));
      assert.ok(body.timestamps.length <= 720);
      assert.equal(body.series['cmp-w'].length, body.timestamps.length);
    }
  });

  it('aligns stations on the same buckets with each bucket\'s mean, null where a station has none', async () => {
    await addStation(env().db, 'cmp-a');
    await addStation(env().db, 'cmp-b');
    const rows = (offsets: number[], value: (i: number) => number) =>
      offsets.map((m, i) => ({ ...makeReadings(1, isoMinutesAgo(m), 1)[0]!, pm10: value(i), quality_flag: 'ok' as const }));
    await storeReadings(env().db, 'cmp-a', rows(Array.from({ length: 120 }, (_, i) => i), (i) => i));
    await storeReadings(env().db, 'cmp-b', rows([5, 6, 7, 300], () => 50));
    for (const hours of [2, 24, 200]) {
      const { status, body } = await env().getJson(`/api/v1/data/compare/?stations=cmp-a,cmp-b&param=pm10&hours=${hours}`);
      assert.equal(status, 200);
      assert.deepEqual(Object.keys(body).sort(), ['hours', 'interval_seconds', 'param', 'quality', 'series', 'timestamps']);
      assert.equal(body.param, 'pm10');
      assert.equal(body.quality, null);
      const step = body.interval_seconds * 1000;
      body.timestamps.forEach((t: string, i: number) => i > 0 && assert.equal(Date.parse(t) - Date.parse(body.timestamps[i - 1]), step));
      // The oracle: each bucket's mean straight from the readings.
      const expected = await env().db.pool.any(sql.type(z.object({ station_id: z.string(), slot: z.string(), values: z.array(z.number().nullable()) }))`
        select station_id, date_bin(make_interval(secs => ${body.interval_seconds}), ts, '2000-01-03 00:00:00+00') as slot, array_agg(pm10) as values
        from readings where station_id in ('cmp-a', 'cmp-b') and ts >= ${body.timestamps[0]} group by 1, 2`);
      const lookup = new Map(expected.map((e) => [`${e.station_id} ${e.slot}`, exactStatistics(e.values).mean]));
      for (const id of ['cmp-a', 'cmp-b']) {
        body.timestamps.forEach((t: string, i: number) => assert.equal(body.series[id][i], lookup.get(`${id} ${t}`) ?? null, `${hours}h ${id} ${t}`));
      }
      assert.ok(body.series['cmp-b'].filter((v: number | null) => v !== null).length >= 1);
      assert.ok(body.series['cmp-b'].some((v: number | null) => v === null));
    }
  });

  it('reads again when a backfill lands between the check of the rollups and its statement', async () => {
    const { db } = env();
    const key = await stationWithKey(env(), 'cmp-race');
    const at = (minutes: number, value: number) => ({ timestamp: isoMinutesAgo(minutes), temperature_c: value });
    assert.equal((await postBatch(env(), key, { station_id: 'cmp-race', readings: Array.from({ length: 48 }, (_, i) => at(i * 60 + 30, 10)) })).status, 201);
    await db.rollups.refresh();
    const args = { stationIds: ['cmp-race'], param: 'temperature_c' as const, hours: 72, seconds: 3600 };
    // The batch lands after the check: a reading 40 hours back (a backfill on timescale) and a live one.
    let reads = 0;
    const result = await readCurrent(db, async () => {
      if (reads++ === 0) assert.equal((await postBatch(env(), key, { station_id: 'cmp-race', readings: [at(40 * 60 + 10, 90), at(1, 90)] })).status, 201);
      return compareStations(db.pool, args);
    });
    await db.rollups.refresh();
    const settled = await compareStations(db.pool, args);
    const byTime = (row: typeof result) => new Map(row.timestamps.map((t, i) => [t, row.series['cmp-race']![i]]));
    const [got, expected] = [byTime(result), byTime(settled)];
    const shared = [...expected.keys()].filter((t) => got.has(t));
    assert.ok(shared.length >= 71);
    for (const t of shared) assert.equal(got.get(t), expected.get(t), `${t}: both readings of the batch`);
    assert.equal(reads, db.engine === 'timescale' ? 2 : 1);
  });

  it('refuses more than 10 stations, an unknown param and a missing list; names unknown stations with 404', async () => {
    const eleven = Array.from({ length: 11 }, (_, i) => `s${i}`).join(',');
    const many = await env().getJson(`/api/v1/data/compare/?stations=${eleven}`);
    assert.equal(many.status, 400);
    assert.deepEqual(many.body.errors, [{ param: 'stations', message: 'must be 1 to 10 comma-separated station ids' }]);
    const param = await env().getJson('/api/v1/data/compare/?stations=cmp-a&param=wind');
    assert.deepEqual(param.body.errors, [{ param: 'param', message: 'must be one of temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10, co2_ppm' }]);
    const none = await env().getJson('/api/v1/data/compare/');
    assert.deepEqual(none.body.errors, [{ param: 'stations', message: 'is required' }]);
    for (const list of ['cmp-a,,cmp-b', 'cmp-a,', ',cmp-a', 'cmp-a;cmp-b', 'cmp-a,\tcmp-b']) {
      const bad = await env().getJson(`/api/v1/data/compare/?stations=${encodeURIComponent(list)}`);
      assert.deepEqual(bad.body.errors, [{ param: 'stations', message: 'must be 1 to 10 comma-separated station ids' }], list);
    }
    // Spaces around the commas are fine, and a station named twice counts once.
    const twice = await env().getJson(`/api/v1/data/compare/?stations=${encodeURIComponent('cmp-a , cmp-b,cmp-a')}`);
    assert.equal(twice.status, 200);
    assert.deepEqual(Object.keys(twice.body.series), ['cmp-a', 'cmp-b']);
    const unknown = await env().getJson('/api/v1/data/compare/?stations=cmp-a,cmp-ghost');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.detail, "station 'cmp-ghost' is unknown");
  });

  it('plans only the chunks its window reaches, from the readings or the hourly rollup (timescale)', async function () {
    if (env().engine !== 'timescale') this.skip();
    await addWeeksOfHours(env(), 'cmp-chunks');
    await env().db.rollups.refresh();
    const all = await chunkCount(env());
    // 24 hours: 5-minute means of the readings; 72 hours: hourly means of the rollup, whose real-time part reads
    // the readings since its watermark.
    for (const hours of [24, 72]) {
      const statement = compareQuery({ stationIds: ['cmp-chunks'], param: 'temperature_c', hours, seconds: compareInterval(hours) });
      assertPlansItsWindow(await env().db.pool.any(sql.unsafe`explain ${statement}`), all);
      const { body } = await env().getJson(`/api/v1/data/compare/?stations=cmp-chunks&param=temperature_c&hours=${hours}`);
      assert.equal(body.series['cmp-chunks'].filter((v: number | null) => v !== null).length, hours === 24 ? 23 : 71, `${hours} h`);
    }
  });
});

/** Eight weeks of hourly readings ending now, written straight to readings: eight or nine seven-day chunks. */
async function addWeeksOfHours(env: TestEnv, stationId: string): Promise<void> {
  await addStation(env.db, stationId);
  await env.db.pool.query(sql.unsafe`insert into readings (station_id, ts, temperature_c, quality_flag)
    select ${stationId}, now() - g * interval '1 hour', g, 'ok' from generate_series(1, 56 * 24) g`);
}

async function chunkCount(env: TestEnv): Promise<number> {
  return env.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from timescaledb_information.chunks where hypertable_name = 'readings'`);
}

/**
 * A plan (EXPLAIN's rows) that reads one or two chunks of readings, of `all`, none of them planned and then left
 * out when the statement started: chunks left out while planning are not in a plan at all; those the planner
 * could not leave out (a window it does not read as a constant) are counted in `Chunks excluded during startup`.
 */
function assertPlansItsWindow(rows: readonly Record<string, unknown>[], all: number): void {
  const plan = rows.map((r) => String(r['QUERY PLAN'])).join('\n');
  assert.ok(all >= 8, `${all} chunks`);
  const planned = new Set(plan.match(/_hyper_1_\d+_chunk/g) ?? []);
  const excludedAtStart = [...plan.matchAll(/Chunks excluded during startup: (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  assert.ok(planned.size >= 1 && planned.size <= 2, `the plan reads ${planned.size} of ${all} chunks of readings:\n${plan}`);
  assert.equal(excludedAtStart, 0, `chunks planned, then excluded at start:\n${plan}`);
}
