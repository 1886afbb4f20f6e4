import assert from 'node:assert/strict';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { admin } from '../../helpers/database.js';
import { exactStatistics, statisticsOf } from '../../helpers/exactStatistics.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';
import { seeded } from '../../helpers/readings.js';

const seed = Number(process.env.LOCAL_SEED ?? Math.floor(Math.random() * 2 ** 31));
const minute = 60_000;
const intervalSeconds = 600;

// Readings every ten minutes (the stations' interval) around both clock changes of 2026 in Zurich
// (29 March, 25 October) and Newfoundland (8 March, 1 November, half an hour off UTC), a few missing,
// some out of bounds (flagged suspect), each value drawn from the seed.
const stretches: Record<string, [string, string][]> = {
  zurich: [['2026-03-26T00:00:00Z', '2026-04-02T12:00:00Z'], ['2026-10-22T00:00:00Z', '2026-10-28T00:00:00Z']],
  stjohns: [['2026-03-05T00:00:00Z', '2026-03-11T00:00:00Z'], ['2026-10-29T00:00:00Z', '2026-11-04T00:00:00Z']],
};
const zones: Record<string, string> = { zurich: 'Europe/Zurich', stjohns: 'America/St_Johns' };

function readingsOf(random: () => number, from: string, to: string) {
  const out: Record<string, unknown>[] = [];
  for (let t = Date.parse(from); t < Date.parse(to); t += 10 * minute) {
    if (random() < 0.05) continue;
    out.push({
      timestamp: new Date(t).toISOString(),
      temperature_c: random() < 0.03 ? 70 : Math.round((5 + 10 * Math.sin(t / 3.6e6 / 24 * 2 * Math.PI) + random() * 3) * 100) / 100,
      humidity_rh: random() < 0.05 ? null : Math.round(random() * 1000) / 10,
      pressure_hpa: 950 + Math.round(random() * 400) / 10,
      pm2_5: Math.round(random() * 500) / 10,
    });
  }
  return out;
}

/** SQL's own ISO 8601 text of an instant in a zone with its offset then, written here apart from the service's. */
const isoIn = (at: string, zone: string) => {
  const seconds = `extract(epoch from (${at} at time zone '${zone}') - (${at} at time zone 'UTC'))`;
  return `to_char(${at} at time zone '${zone}', 'YYYY-MM-DD"T"HH24:MI:SS') || case when ${seconds} < 0 then '-' else '+' end
    || lpad((abs(${seconds})::int / 3600)::text, 2, '0') || ':' || lpad((abs(${seconds})::int % 3600 / 60)::text, 2, '0')`;
};

type OracleRow = Record<string, number | string | null>;

/**
 * The oracle: a GROUP BY over the raw readings in the zone's local time (ts AT TIME ZONE). Hours are the
 * zone's wall-clock hour together with its offset then (a clock set back gives its hour twice); days,
 * weeks and months the wall clock's. Each bucket's length is its local calendar's (23 or 25 hours on a
 * clock change), cut by the range of local dates.
 */
async function oracle(env: TestEnv, station: string, zone: string, period: string, opts: { quality?: string; from?: string; to?: string; percentiles?: number[] } = {}): Promise<OracleRow[]> {
  const percentiles = opts.percentiles ?? [];
  const fractions = `array[${percentiles.map((p) => p / 100).join(',') || '0.5'}]::float8[]`;
  const local = `(ts at time zone '${zone}')`;
  const offset = `(${local} - (ts at time zone 'UTC'))`;
  const group = period === 'hour' ? `date_trunc('hour', ${local}), ${offset}` : `date_trunc('${period}', ${local})`;
  const start = period === 'hour' ? `(date_trunc('hour', ${local}) - ${offset}) at time zone 'UTC'` : `date_trunc('${period}', ${local}) at time zone '${zone}'`;
  const lo = opts.from ? `('${opts.from}'::date)::timestamp at time zone '${zone}'` : `'-infinity'::timestamptz`;
  const hi = opts.to ? `('${opts.to}'::date + 1)::timestamp at time zone '${zone}'` : `'infinity'::timestamptz`;
  const end = period === 'hour' ? `(b.start + interval '1 hour')` : `(((b.start at time zone '${zone}') + interval '1 ${period}') at time zone '${zone}')`;
  const oracleMetrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5'];
  // Each bucket's values, whose statistics the oracle computes itself (exactStatistics), and percentile_cont's.
  const metricStats = oracleMetrics.map((m) => `
    array_agg(${m}) as ${m}, percentile_cont(${fractions}) within group (order by ${m}) as ${m}_pcts`).join(',');
  return admin(env.databaseUrl, async (client) => (await client.query(`
    select ${isoIn('b.start', zone)} as period_start, b.*,
      ceil(extract(epoch from least(${end}, ${hi}) - greatest(b.start, ${lo})) / ${intervalSeconds})::int as expected
    from (
      select min(${start}) as start, count(*)::int as n, ${metricStats}
      from readings where station_id = $1 ${opts.quality ? `and quality_flag = '${opts.quality}'` : ''} and ts >= ${lo} and ts < ${hi}
      group by ${group}
    ) b order by b.start`, [station])).rows.map((row) => ({ ...row, ...statisticsOf(row, oracleMetrics) })));
}

/** The API's results against the oracle's: buckets, counts, expected, coverage, every statistic, the percentiles exactly. */
function assertLikeOracle(results: Record<string, unknown>[], expected: OracleRow[], fields: string[], percentiles: number[], what: string, minCoverage?: number) {
  assert.deepEqual(results.map((r) => r.period_start), expected.map((e) => e.period_start), `${what}: buckets`);
  expected.forEach((e, i) => {
    const r = results[i]!;
    const at = `${what} ${e.period_start}`;
    assert.equal(r.count, e.n, `${at} count`);
    assert.equal(r.expected, e.expected, `${at} expected`);
    const coverage = Math.round((Number(e.n) / Number(e.expected)) * 1000) / 10;
    assert.equal(r.coverage_pct, coverage, `${at} coverage_pct`);
    const blank = minCoverage !== undefined && coverage < minCoverage;
    for (const field of fields) {
      const value = (r[field] ?? null) as number | null;
      if (blank && !field.endsWith('_count')) {
        assert.equal(value, null, `${at} ${field} below min_coverage`);
        continue;
      }
      assert.equal(value, e[field] as number | null, `${at} ${field}`);
    }
    for (const metric of ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5']) {
      percentiles.forEach((p, k) => {
        const name = `${metric}_p${String(p).padStart(2, '0')}`;
        const pcts = e[`${metric}_pcts`] as unknown as (number | null)[] | null;
        assert.equal(r[name], blank ? null : pcts?.[k] ?? null, `${at} ${name}`);
      });
    }
  });
}

const defaultFields = ['temperature_c_mean', 'temperature_c_min', 'temperature_c_max', 'humidity_rh_mean', 'pressure_hpa_mean', 'pm2_5_mean',
  'temperature_c_sd', 'humidity_rh_sd', 'pressure_hpa_sd', 'pm2_5_sd'];
const metricFields = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5'].flatMap((m) => ['count', 'mean', 'min', 'max', 'sd'].map((s) => `${m}_${s}`));

describeEngines(`statistics in local time, across clock changes (LOCAL_SEED=${seed})`, (env) => {
  const keys: Record<string, string> = {};

  before(async function () {
    this.timeout(120_000);
    console.log(`      LOCAL_SEED=${seed}`);
    const random = seeded(seed);
    for (const [station, ranges] of Object.entries(stretches)) {
      keys[station] = await stationWithKey(env(), station);
      await admin(env().databaseUrl, (client) => client.query('update stations set interval_seconds = $1 where station_id = $2', [intervalSeconds, station]));
      for (const [from, to] of ranges) {
        const readings = readingsOf(random, from, to);
        for (let i = 0; i < readings.length; i += 500) {
          const { status } = await postBatch(env(), keys[station]!, { station_id: station, readings: readings.slice(i, i + 500) });
          assert.equal(status, 201);
        }
      }
    }
  });

  const get = async (query: string) => {
    const { status, body } = await env().getJson(`/api/v1/data/aggregate/?${query}`);
    assert.equal(status, 200, JSON.stringify(body));
    return body;
  };

  it('gives the zone\'s days of 23 and 25 hours, with offsets, as a GROUP BY in local time does', async function () {
    this.timeout(60_000);
    for (const station of Object.keys(stretches)) {
      const zone = zones[station]!;
      const body = await get(`station=${station}&period=day&tz=${zone}`);
      assert.equal(body.tz, zone);
      assertLikeOracle(body.results, await oracle(env(), station, zone, 'day'), defaultFields, [], `${station} days`);
    }
    // Zones a quarter or half an hour off UTC, whose hours and days cut the rollups' UTC hours.
    for (const zone of ['Asia/Kathmandu', 'Asia/Kolkata']) {
      for (const period of ['day', 'hour']) {
        const body = await get(`station=zurich&period=${period}&tz=${zone}&metrics=temperature_c,humidity_rh,pressure_hpa,pm2_5`);
        assert.equal(body.tz, zone);
        assertLikeOracle(body.results, await oracle(env(), 'zurich', zone, period), metricFields, [], `zurich ${period}s in ${zone}`);
      }
    }
    // The days of Zurich's changes: 23 hours (138 readings expected) and 25 (150).
    const zurich = (await get('station=zurich&period=day&tz=Europe/Zurich')).results as { period_start: string; expected: number }[];
    assert.deepEqual(zurich.find((d) => d.period_start === '2026-03-29T00:00:00+01:00')?.expected, 138);
    assert.deepEqual(zurich.find((d) => d.period_start === '2026-10-25T00:00:00+02:00')?.expected, 150);
  });

  it('gives each hour of the zone\'s clock once, a repeated one twice with its offsets', async function () {
    this.timeout(60_000);
    for (const station of Object.keys(stretches)) {
      const zone = zones[station]!;
      const body = await get(`station=${station}&period=hour&tz=${zone}&metrics=temperature_c,humidity_rh,pressure_hpa,pm2_5`);
      assertLikeOracle(body.results, await oracle(env(), station, zone, 'hour'), metricFields, [], `${station} hours`);
    }
    const hours = ((await get('station=zurich&period=hour&tz=Europe/Zurich&from_date=2026-10-25&to_date=2026-10-25')).results as { period_start: string }[]).map((h) => h.period_start);
    assert.ok(hours.includes('2026-10-25T02:00:00+02:00') && hours.includes('2026-10-25T02:00:00+01:00'), hours.join(' '));
    // Newfoundland's hours start half past UTC's.
    const stjohns = (await get('station=stjohns&period=hour&tz=America/St_Johns&from_date=2026-03-06&to_date=2026-03-06')).results as { period_start: string }[];
    assert.equal(stjohns[0]!.period_start, '2026-03-06T00:00:00-03:30');
  });

  it('takes local dates, cutting a week or month, with any quality filter, percentiles and a completeness threshold', async function () {
    this.timeout(120_000);
    const percentiles = [5, 25, 50, 75, 95];
    for (const station of Object.keys(stretches)) {
      const zone = zones[station]!;
      const [from, to] = station === 'zurich' ? ['2026-03-28', '2026-10-24'] : ['2026-03-07', '2026-11-01'];
      for (const period of ['day', 'week', 'month']) {
        for (const quality of [undefined, 'ok', 'suspect']) {
          const query = `station=${station}&period=${period}&tz=${zone}&from_date=${from}&to_date=${to}&percentiles=${percentiles.join(',')}&min_coverage=75${quality ? `&quality=${quality}` : ''}`;
          const body = await get(query);
          assertLikeOracle(body.results, await oracle(env(), station, zone, period, { quality, from, to, percentiles }), defaultFields, percentiles, query, 75);
        }
      }
    }
    // A percentile as PostgreSQL's percentile_cont: exactly.
    const one = await get('station=zurich&period=day&tz=Europe/Zurich&percentiles=50&metrics=temperature_c');
    assert.ok(one.results.every((r: Record<string, unknown>) => 'temperature_c_p50' in r));
  });

  it('reads percentiles bucket by bucket as the grouped readings give them (as_of reads them grouped)', async function () {
    this.timeout(120_000);
    // An instant after every batch above: as of it the archive holds what it holds now, read by grouping the readings.
    const asOf = new Date().toISOString();
    const percentiles = '1,5,50,95,99';
    for (const station of Object.keys(stretches)) {
      for (const zone of ['UTC', zones[station]!, 'Asia/Kolkata']) {
        for (const period of ['hour', 'day', 'week', 'month']) {
          for (const quality of [undefined, 'suspect']) {
            const query = `station=${station}&period=${period}&tz=${zone}&percentiles=${percentiles}&from_date=2026-03-06&to_date=2026-10-31${quality ? `&quality=${quality}` : ''}`;
            const [direct, grouped] = [(await get(query)).results, (await get(`${query}&as_of=${asOf}`)).results] as Record<string, unknown>[][];
            assert.deepEqual(direct!.map((r) => r.period_start), grouped!.map((r) => r.period_start), `${query}: buckets`);
            direct!.forEach((r, i) => {
              const names = Object.keys(r).filter((k) => /_p\d\d$/.test(k) || k === 'count' || k === 'expected');
              assert.ok(names.length > 2, query);
              for (const name of names) assert.equal(r[name], grouped![i]![name], `${query} ${r.period_start} ${name}`);
            });
          }
        }
      }
    }
  });

  it('follows a backfill into a day of a clock change and an operator\'s override, read after their answers', async function () {
    this.timeout(60_000);
    // Readings missing from the 29 March stretch, posted late, then the day's morning flagged invalid.
    const late = readingsOf(seeded(seed + 1), '2026-03-29T00:05:00Z', '2026-03-29T06:05:00Z');
    assert.equal((await postBatch(env(), keys.zurich!, { station_id: 'zurich', readings: late })).status, 201);
    await recordOverride(env().db, { stationId: 'zurich', from: '2026-03-29T04:00:00Z', to: '2026-03-29T09:00:00Z', flag: 'invalid', reason: 'test' });
    for (const quality of [undefined, 'ok', 'invalid']) {
      const body = await get(`station=zurich&period=day&tz=Europe/Zurich${quality ? `&quality=${quality}` : ''}`);
      assertLikeOracle(body.results, await oracle(env(), 'zurich', 'Europe/Zurich', 'day', { quality }), defaultFields, [], `after the backfill, ${quality ?? 'all'}`);
    }
  });

  it('gives the same buckets as CSV and Parquet, and names what is wrong', async () => {
    const json = (await get('station=zurich&period=day&tz=Europe/Zurich&percentiles=50')).results as Record<string, unknown>[];
    const csv = await (await env().get('/api/v1/data/aggregate/?station=zurich&period=day&tz=Europe/Zurich&percentiles=50&output=csv')).text();
    assert.match(csv, /# Timestamps are Europe\/Zurich time, with its UTC offset\./);
    const rows = csv.split('\n').filter((line) => /^\d{4}-/.test(line)).map((line) => line.split(','));
    const header = csv.split('\n').find((line) => line.startsWith('period_start'))!.split(',');
    assert.ok(header.includes('temperature_c_p50'));
    assert.deepEqual(rows.map((r) => r[0]), json.map((r) => r.period_start));
    const file = await readParquet(new Uint8Array(await (await env().get('/api/v1/data/aggregate/?station=zurich&period=day&tz=Europe/Zurich&output=parquet')).arrayBuffer()));
    assert.deepEqual(file.rows.map((r) => Number(r[0] as bigint) / 1000), json.map((r) => Date.parse(r.period_start as string)));
    assert.equal(file.metadata.buckets_time_zone, 'Europe/Zurich');
    for (const [query, param] of [['tz=Mars/Olympus', 'tz'], ['tz=%2B05:30', 'tz'], ['percentiles=0', 'percentiles'], ['percentiles=100', 'percentiles'], ['percentiles=x', 'percentiles'], ['min_coverage=101', 'min_coverage']] as const) {
      const { status, body } = await env().getJson(`/api/v1/data/aggregate/?station=zurich&${query}`);
      assert.equal(status, 400, query);
      assert.deepEqual(body.errors.map((e: { param: string }) => e.param), [param], query);
    }
    // A zone is answered by the name it was asked by, in its proper case; another alias by the zone it names.
    for (const [asked, named] of [['asia/kolkata', 'Asia/Kolkata'], ['Asia/Calcutta', 'Asia/Calcutta'], ['EUROPE/ZURICH', 'Europe/Zurich'], ['Canada/Newfoundland', 'America/St_Johns']]) {
      assert.equal((await get(`station=stjohns&period=day&tz=${asked}`)).tz, named, asked);
    }
    // UTC by any of its names is the answer without tz.
    const utc = await get('station=zurich&period=day');
    for (const name of ['UTC', 'Etc/UTC', 'utc']) assert.deepEqual((await get(`station=zurich&period=day&tz=${name}`)).results, utc.results, name);
  });

  it('gives the diurnal, weekly and yearly cycles as a GROUP BY on the zone\'s clock does', async function () {
    this.timeout(60_000);
    const slots = { hour_of_day: 'hour', day_of_week: 'isodow', month_of_year: 'month' } as const;
    for (const station of Object.keys(stretches)) {
      const zone = zones[station]!;
      for (const [by, field] of Object.entries(slots)) {
        for (const [param, percentiles] of [['temperature_c', []], ['humidity_rh', [5, 50, 95]]] as const) {
          const query = `station=${station}&param=${param}&by=${by}&tz=${zone}&quality=ok${percentiles.length ? `&percentiles=${percentiles.join(',')}` : ''}`;
          const { status, body } = await env().getJson(`/api/v1/data/profile/?${query}`);
          assert.equal(status, 200, JSON.stringify(body));
          assert.deepEqual([body.station, body.param, body.by, body.tz], [station, param, by, zone]);
          const expected = await admin(env().databaseUrl, async (client) => (await client.query(`
            select extract(${field} from ts at time zone '${zone}')::int as slot, array_agg(${param}) as values,
              percentile_cont(array[${percentiles.map((p) => p / 100).join(',') || '0.5'}]::float8[]) within group (order by ${param}) as pcts
            from readings where station_id = $1 and quality_flag = 'ok' group by 1 having count(${param}) > 0 order by 1`, [station])).rows
            .map((row) => ({ ...row, ...exactStatistics(row.values) })));
          assert.deepEqual(body.results.map((r: { slot: number }) => r.slot), expected.map((e) => e.slot), `${query}: slots`);
          expected.forEach((e, i) => {
            const r = body.results[i];
            assert.equal(r.count, e.count, `${query} ${e.slot} count`);
            assert.equal(r.mean, e.mean, `${query} ${e.slot} mean`);
            assert.equal(r.sd, e.sd, `${query} ${e.slot} sd`);
            percentiles.forEach((p, k) => assert.equal(r[`p${String(p).padStart(2, '0')}`], e.pcts[k], `${query} ${e.slot} p${p}`));
          });
        }
      }
    }
    const csv = await (await env().get('/api/v1/data/profile/?station=zurich&by=hour_of_day&tz=Europe/Zurich&percentiles=50&output=csv')).text();
    assert.ok(csv.split('\n').includes('slot,count,mean,sd,p50'));
  });

  it('aligns compared series on the zone\'s hours and names them with its offsets', async () => {
    const now = await env().getJson('/api/v1/data/compare/?stations=zurich,stjohns&hours=48&tz=America/St_Johns');
    assert.equal(now.status, 200);
    assert.equal(now.body.tz, 'America/St_Johns');
    assert.equal(now.body.interval_seconds, 300);
    assert.match(now.body.timestamps[0], /-0[23]:30$/);
    // Hourly buckets over the last 30 days, of a station that posted the last two.
    const key = await stationWithKey(env(), 'stjohns-now');
    const recent = readingsOf(seeded(seed + 2), new Date(Date.now() - 48 * 3_600_000).toISOString(), new Date(Date.now() - 10 * minute).toISOString());
    assert.equal((await postBatch(env(), key, { station_id: 'stjohns-now', readings: recent })).status, 201);
    const hourly = await env().getJson('/api/v1/data/compare/?stations=stjohns-now&hours=720&tz=America/St_Johns');
    assert.equal(hourly.body.interval_seconds, 3600);
    // Each bucket starts on the hour of Newfoundland's clock: half past a UTC hour.
    for (const at of hourly.body.timestamps as string[]) assert.match(at, /T\d{2}:00:00-0[23]:30$/);
    // The means against a GROUP BY over the same local hours.
    const expected = await admin(env().databaseUrl, async (client) => (await client.query(`
      select ${isoIn(`(date_trunc('hour', ts - interval '30 minutes') + interval '30 minutes')`, 'America/St_Johns')} as at, array_agg(temperature_c) as values
      from readings where station_id = 'stjohns-now' group by 1`)).rows);
    const byStart = new Map(expected.map((e) => [e.at as string, exactStatistics(e.values).mean]));
    assert.ok((hourly.body.series['stjohns-now'] as (number | null)[]).filter((v) => v !== null).length >= 47, 'two days of hours');
    (hourly.body.timestamps as string[]).forEach((at, i) => {
      const mean = hourly.body.series['stjohns-now'][i];
      if (mean === null) assert.ok(!byStart.has(at) || byStart.get(at) === null, at);
      else assert.equal(mean, byStart.get(at) ?? null, `compare ${at}`);
    });
  });
});
