import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { storeReadings } from '../../../src/readings/ingest/store.js';
import { numericFields, type NewReading } from '../../../src/readings/reading.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { addStation } from '../../helpers/readings.js';

const minute = 60_000;
const day = 86_400_000;

/** Three whole UTC days of one-minute temperatures: a daily cycle, spikes, a four-hour plateau, gaps of 10, 3 and 120 minutes. */
function threeDays(start: number): NewReading[] {
  const missing = (i: number) => (i >= 100 && i < 110) || (i >= 200 && i < 203) || (i >= 1500 && i < 1620);
  const readings: NewReading[] = [];
  for (let i = 0; i < 3 * 1440; i++) {
    if (missing(i)) continue;
    let t = Math.round((10 + 5 * Math.sin((2 * Math.PI * i) / 1440)) * 10) / 10;
    if (i >= 2200 && i < 2440) t = 12.3;
    if (i % 611 === 300) t += 10;
    const reading = Object.fromEntries(numericFields.map((f) => [f, null])) as unknown as NewReading;
    readings.push({ ...reading, ts: new Date(start + i * minute).toISOString(), temperature_c: t, quality_flag: 'ok', firmware_version: null, module_data: null });
  }
  return readings;
}

/** One row of a query on the test's own connection: the oracle is SQL over the raw readings. */
async function oracle<T>(env: TestEnv, text: string, values: unknown[]): Promise<T[]> {
  const client = new pg.Client({ connectionString: env.databaseUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

describeEngines('the quality report and qc=pass aggregates', (env) => {
  const station = 'qc-report';
  const first = Math.floor((Date.now() - 6 * day) / day) * day;
  const from = new Date(first).toISOString().slice(0, 10);
  const to = new Date(first + 2 * day).toISOString().slice(0, 10);
  const end = new Date(first + 3 * day).toISOString();

  before(async function () {
    this.timeout(60_000);
    await addStation(env().db, station);
    await storeReadings(env().db, station, threeDays(first));
    await env().db.rollups.refresh();
  });

  it('counts readings, coverage and gaps as SQL over the readings does', async () => {
    const { status, body } = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=${from}&to_date=${to}`);
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.interval_seconds, 60);
    assert.equal(body.expected, 3 * 1440);
    const [{ observed }] = (await oracle<{ observed: number }>(env(), 'select count(*)::int as observed from readings where station_id = $1 and ts >= $2 and ts < $3', [station, `${from}T00:00:00Z`, end])) as [{ observed: number }];
    assert.equal(body.observed, observed);
    assert.equal(body.coverage_pct, Math.round((observed / (3 * 1440)) * 1000) / 10);
    const daily = await oracle<{ date: string; observed: number }>(env(), `
      select to_char(ts at time zone 'UTC', 'YYYY-MM-DD') as date, count(*)::int as observed
      from readings where station_id = $1 and ts >= $2 and ts < $3 group by 1 order by 1`, [station, `${from}T00:00:00Z`, end]);
    assert.deepEqual(body.daily.map((d: { date: string; observed: number; expected: number }) => ({ date: d.date, observed: d.observed })), daily);
    for (const d of body.daily) assert.equal(d.expected, 1440);
    // Runs of more than three missing readings between two readings (none here before the first or after the last).
    const gaps = await oracle<{ start: string; end: string; missing: number }>(env(), `
      select to_char((prev + interval '1 minute') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as start,
             to_char((ts - interval '1 minute') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as end,
             (round(extract(epoch from ts - prev) / 60) - 1)::int as missing
      from (select ts, lag(ts) over (order by ts) as prev from readings where station_id = $1) r
      where prev is not null and round(extract(epoch from ts - prev) / 60) - 1 > 3 order by ts`, [station]);
    assert.deepEqual(body.gaps, gaps);
    assert.deepEqual(gaps.map((g) => g.missing), [10, 120]);
  });

  it('finds the flat-line episodes and counts spikes as SQL over neighbouring readings does', async () => {
    const { body } = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=${from}&to_date=${to}`);
    // Runs of one repeated temperature (the default tolerance, 0.05, is below the values' 0.1 steps) lasting three hours or more.
    const flat = await oracle<{ start: string; end: string; readings: number; value: number }>(env(), `
      select to_char(min(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as start, to_char(max(ts) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as end,
             count(*)::int as readings, min(temperature_c) as value
      from (select ts, temperature_c, sum(changed) over (order by ts) as run
            from (select ts, temperature_c, (temperature_c is distinct from lag(temperature_c) over (order by ts))::int as changed
                  from readings where station_id = $1) c) r
      group by run having max(ts) - min(ts) >= interval '3 hours' order by 1`, [station]);
    assert.deepEqual(body.flat_lines, flat.map((f) => ({ metric: 'temperature_c', ...f })));
    assert.equal(flat.length, 1);
    // Spikes: more than 3 °C (the default suspect threshold) from the mean of both neighbours.
    const [{ spikes }] = (await oracle<{ spikes: number }>(env(), `
      select count(*)::int as spikes from (
        select temperature_c as x, lag(temperature_c) over (order by ts) as prev, lead(temperature_c) over (order by ts) as next
        from readings where station_id = $1) r
      where abs(x - (prev + next) / 2) > 3`, [station])) as [{ spikes: number }];
    assert.ok(spikes > 0);
    assert.equal(body.spikes.temperature_c, spikes);
  });

  it('counts each day\'s flags as the qc=true download gives them', async () => {
    const { body } = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=${from}&to_date=${to}`);
    const csv = await (await env().get(`/api/v1/data/download/?station=${station}&qc=true&from_date=${from}&to_date=${to}`)).text();
    const names: Record<string, string> = { 1: 'pass', 2: 'not_evaluated', 3: 'suspect', 4: 'fail', 9: 'missing' };
    const counted: Record<string, Record<string, number>> = {};
    for (const line of csv.split('\n').filter((l) => /^\d{4}-/.test(l))) {
      const fields = line.split(',');
      const date = fields[0]!.slice(0, 10);
      counted[date] ??= { pass: 0, not_evaluated: 0, suspect: 0, fail: 0, missing: 0 };
      counted[date][names[fields[8]!]!]!++;
    }
    for (const d of body.daily) assert.deepEqual(d.flags.temperature_c, counted[d.date], d.date);
  });

  it('says how old the newest reading is, and which days it covers', async () => {
    const lastReading = Date.parse(end) - minute;
    const earliest = Math.floor((Date.now() - lastReading) / 6_000) / 10;
    const { body } = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=${from}&to_date=${to}`);
    const latest = Math.floor((Date.now() - lastReading) / 6_000) / 10;
    assert.ok(body.latest_age_minutes >= earliest && body.latest_age_minutes <= latest, `${body.latest_age_minutes}`);
    assert.equal((await env().getJson(`/api/v1/stations/${station}/quality/?from_date=${to}&to_date=${from}`)).status, 400);
    assert.equal((await env().getJson('/api/v1/stations/nowhere/quality/')).status, 404);
    // By default the 30 days to today, here from the station's first reading on.
    const today = new Date().toISOString().slice(0, 10);
    const recent = await env().getJson(`/api/v1/stations/${station}/quality/`);
    assert.equal(recent.status, 200);
    assert.equal(recent.body.to, today);
    assert.equal(recent.body.from, from);
    // From long before the first reading to long after today: the station's days up to today.
    const wide = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=2001-01-01&to_date=2999-12-31`);
    assert.deepEqual([wide.body.from, wide.body.to], [from, today]);
    assert.equal(wide.body.observed, 3 * 1440 - 133);
    // More than a year: its last 366 days.
    await addStation(env().db, 'qc-empty');
    const years = await env().getJson('/api/v1/stations/qc-empty/quality/?from_date=2001-01-01&to_date=2003-01-01');
    assert.deepEqual([years.body.from, years.body.to, years.body.daily.length, years.body.expected], ['2002-01-01', '2003-01-01', 366, 366 * 1440]);
    assert.deepEqual(years.body.gaps, [{ start: '2002-01-01T00:00:00.000Z', end: '2003-01-01T23:59:00.000Z', missing: 366 * 1440 }]);
    const future = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=2999-01-01`);
    assert.deepEqual([future.body.from, future.body.to, future.body.observed, future.body.daily.length], ['2999-01-01', '2999-01-01', 0, 0]);
  });

  it('leaves out of each metric\'s statistics the readings that did not pass (qc=pass), as SQL over the passing readings does', async () => {
    const csv = await (await env().get(`/api/v1/data/download/?station=${station}&qc=true`)).text();
    const failing = csv.split('\n').filter((l) => /^\d{4}-/.test(l)).map((l) => l.split(',')).filter((f) => f[8] !== '1').map((f) => f[0]!);
    assert.ok(failing.length > 50, `${failing.length} readings not passing`);
    const { status, body } = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=day&metrics=temperature_c&qc=pass&from_date=${from}&to_date=${to}`);
    assert.equal(status, 200, JSON.stringify(body));
    const expected = await oracle<{ period_start: string; count: number; n: number; mean: number; min: number; max: number; sd: number }>(env(), `
      select to_char(date_trunc('day', ts, 'UTC') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as period_start, count(*)::int as count,
             count(temperature_c) filter (where ok)::int as n, avg(temperature_c) filter (where ok) as mean,
             min(temperature_c) filter (where ok) as min, max(temperature_c) filter (where ok) as max, stddev_samp(temperature_c) filter (where ok) as sd
      from (select *, not (ts = any($2::timestamptz[])) as ok from readings where station_id = $1) r
      group by 1 order by 1`, [station, failing]);
    assert.equal(body.results.length, expected.length);
    body.results.forEach((r: Record<string, number>, i: number) => {
      const e = expected[i]!;
      assert.equal(r.period_start, e.period_start);
      assert.equal(r.count, e.count);
      assert.equal(r.temperature_c_count, e.n);
      assert.equal(r.temperature_c_min, e.min);
      assert.equal(r.temperature_c_max, e.max);
      assert.ok(Math.abs(r.temperature_c_mean! - e.mean) < 1e-9, `${r.temperature_c_mean} against ${e.mean}`);
      assert.ok(Math.abs(r.temperature_c_sd! - e.sd) < 1e-9, `${r.temperature_c_sd} against ${e.sd}`);
    });
    // Without qc=pass, every reading counts.
    const plain = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=day&metrics=temperature_c&from_date=${from}&to_date=${to}`);
    assert.ok(plain.body.results[0].temperature_c_count > body.results[0].temperature_c_count);
    assert.equal((await env().getJson(`/api/v1/data/aggregate/?station=${station}&qc=all`)).status, 400);
  });

  it('shows, sets and resets a station\'s configuration from the command line, refusing one it cannot run', async () => {
    const settings = { DATABASE_URL: env().databaseUrl };
    const shown = await runCli(['qc', 'show', station], settings);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /"gross_range_test"/);
    assert.match(shown.stdout, /the defaults/);
    const file = path.join(tmpdir(), `envmon-qc-${process.pid}.json`);
    await writeFile(file, JSON.stringify({ streams: { temperature_c: { qartod: { spike_test: { suspect_threshold: 1 } } } } }));
    const set = await runCli(['qc', 'set', station, file], settings);
    assert.equal(set.code, 0, set.stderr);
    const published = await env().getJson(`/api/v1/stations/${station}/qc/`);
    assert.deepEqual(published.body, { streams: { temperature_c: { qartod: { spike_test: { suspect_threshold: 1 } } } } });
    await writeFile(file, JSON.stringify({ streams: { temperature_c: { qartod: { climatology_test: {} } }, wind: { qartod: {} } } }));
    const refused = await runCli(['qc', 'set', station, file], settings);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /climatology_test/);
    assert.match(refused.stderr, /wind/);
    const reset = await runCli(['qc', 'reset', station], settings);
    assert.equal(reset.code, 0, reset.stderr);
    assert.equal((await env().getJson(`/api/v1/stations/${station}/qc/`)).headers.get('x-qc-config'), 'default');
  });
});
