import assert from 'node:assert/strict';
import pg from 'pg';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { ArchiveLog, between, csvRows, pause, type Posted } from '../../helpers/archiveLog.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';

const minute = 60_000;
const day = 86_400_000;
/** The rows a download as of `instant` gives: timestamp, temperature and flag of each reading. */
async function downloadAsOf(env: TestEnv, station: string, instant: string, extra = ''): Promise<string[]> {
  const response = await env.get(`/api/v1/data/download/?station=${station}&as_of=${instant}${extra}`);
  assert.equal(response.status, 200, await response.clone().text());
  return csvRows(await response.text()).map((line) => {
    const fields = line.split(',');
    return `${fields[0]},${fields[1]},${fields[7]}`;
  });
}

const expectedRows = (held: { ts: number; temperature_c: number; flag: string }[]) =>
  held.map((r) => `${new Date(r.ts).toISOString()},${r.temperature_c},${r.flag}`);

describeEngines('reads as of an instant', (env) => {
  const station = 'asof-01';
  const log = new ArchiveLog();
  const instants: Record<string, string> = {};
  // Whole minutes, days back, so that every write lands below the live hour.
  const base = Math.floor((Date.now() - 10 * day) / day) * day;
  const minutes = (from: number, count: number, offset = 0): Posted[] =>
    Array.from({ length: count }, (_, i) => ({ ts: base + (from + i) * minute, temperature_c: Math.round((offset + i * 0.37) * 100) / 100 }));

  before(async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), station);
    instants.empty = await between();
    const post = async (readings: Posted[]) => {
      const started = await between();
      const { status } = await postBatch(env(), key, { station_id: station, readings: readings.map((r) => ({ timestamp: new Date(r.ts).toISOString(), temperature_c: r.temperature_c })) });
      assert.equal(status, 201);
      log.posted(started, readings);
    };
    // Live readings of a day, then a backfill of the day before, a re-sent batch with other values, an
    // override, a deletion, and the deleted range posted again.
    await post(minutes(1440, 120, 5));
    instants.first = await between();
    await post(minutes(0, 90, 20));
    instants.backfilled = await between();
    await post(minutes(1440, 10, 99));
    instants.resent = await between();
    // A whole second between two writes, for Accept-Datetime (an HTTP-date names whole seconds).
    const wholeSecond = Math.ceil(Date.now() / 1000) * 1000;
    await pause(wholeSecond - Date.now() + 5);
    instants.wholeSecond = new Date(wholeSecond).toISOString();
    const flagStart = base + 1450 * minute;
    const flagEnd = base + 1470 * minute;
    log.flagged(await between(), flagStart, flagEnd, 'invalid');
    await recordOverride(env().db, { stationId: station, from: new Date(flagStart).toISOString(), to: new Date(flagEnd).toISOString(), flag: 'invalid', reason: 'sensor fault' });
    instants.flagged = await between();
    const goneStart = base + 1460 * minute;
    const goneEnd = base + 1500 * minute;
    log.deleted(await between(), goneStart, goneEnd);
    await deleteReadings(env().db, { stationId: station, from: new Date(goneStart).toISOString(), to: new Date(goneEnd).toISOString(), reason: 'test rig' });
    instants.deleted = await between();
    await post(minutes(1465, 5, 50));
    instants.reposted = await between();
  });

  it('gives each instant\'s readings, values and flags as the archive held them', async () => {
    for (const [name, instant] of Object.entries(instants)) {
      assert.deepEqual(await downloadAsOf(env(), station, instant), expectedRows(log.heldAt(instant)), `as of ${name}`);
    }
    // The last instant is the archive as it stands.
    const live = await env().get(`/api/v1/data/download/?station=${station}`);
    assert.deepEqual(csvRows(await live.text()).map((l) => { const f = l.split(','); return `${f[0]},${f[1]},${f[7]}`; }), expectedRows(log.heldAt(instants.reposted!)));
  });

  it('names the instant in the citation, the Parquet metadata and Memento-Datetime; takes Accept-Datetime', async () => {
    const at = instants.backfilled!;
    const csv = await env().get(`/api/v1/data/download/?station=${station}&as_of=${at}`);
    assert.equal(csv.headers.get('memento-datetime'), new Date(at).toUTCString());
    assert.match(csv.headers.get('vary') ?? '', /Accept-Datetime/);
    const text = await csv.text();
    assert.ok(text.split('\n').find((l) => l.startsWith('# Cite as:'))!.includes(`as of ${at}`));
    assert.ok(csv.headers.get('x-attribution')!.includes(`as of ${at}`));
    const parquet = await env().get(`/api/v1/data/download/?station=${station}&as_of=${at}&output=parquet`);
    const { readParquet } = await import('../../helpers/parquet.js');
    const read = await readParquet(new Uint8Array(await parquet.arrayBuffer()));
    assert.equal(read.metadata.as_of, at);
    assert.equal(read.rows.length, log.heldAt(at).length);
    // RFC 7089: an HTTP-date, to the second.
    const second = new Date(instants.wholeSecond!);
    const memento = await env().get(`/api/v1/data/download/?station=${station}`, { headers: { 'Accept-Datetime': second.toUTCString() } });
    assert.equal(memento.headers.get('memento-datetime'), second.toUTCString());
    assert.deepEqual(csvRows(await memento.text()).map((l) => { const f = l.split(','); return `${f[0]},${f[1]},${f[7]}`; }), expectedRows(log.heldAt(second.toISOString())));
  });

  it('refuses an instant in the future or malformed, and is empty before the first reading', async () => {
    const future = await env().getJson(`/api/v1/data/download/?station=${station}&as_of=${new Date(Date.now() + 3_600_000).toISOString()}`);
    assert.equal(future.status, 400);
    assert.deepEqual(future.body.errors, [{ param: 'as_of', message: 'must not be in the future' }]);
    const malformed = await env().getJson(`/api/v1/data/aggregate/?station=${station}&as_of=yesterday`);
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.errors[0].param, 'as_of');
    const header = await env().get(`/api/v1/data/historical/?station=${station}`, { headers: { 'Accept-Datetime': 'soon' } });
    assert.equal(header.status, 400);
    assert.equal(((await header.json()) as { errors: { param: string }[] }).errors[0]!.param, 'Accept-Datetime');
    assert.deepEqual(await downloadAsOf(env(), station, instants.empty!), []);
    const aggregate = await env().getJson(`/api/v1/data/aggregate/?station=${station}&as_of=${instants.empty}`);
    assert.equal(aggregate.status, 200);
    assert.deepEqual(aggregate.body.results, []);
  });

  it('sums aggregates from the readings as they were, for every period and quality filter', async () => {
    for (const [name, instant] of Object.entries(instants)) {
      const held = log.heldAt(instant);
      for (const period of ['hour', 'day', 'week', 'month'] as const) {
        for (const quality of [undefined, 'ok', 'invalid'] as const) {
          const kept = held.filter((r) => !quality || r.flag === quality);
          const buckets = new Map<number, number[]>();
          for (const r of kept) {
            const date = new Date(r.ts);
            const start = period === 'hour' ? Math.floor(r.ts / 3_600_000) * 3_600_000
              : period === 'day' ? Math.floor(r.ts / day) * day
                : period === 'week' ? Math.floor(r.ts / day) * day - ((date.getUTCDay() + 6) % 7) * day
                  : Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
            buckets.set(start, [...(buckets.get(start) ?? []), r.temperature_c]);
          }
          const { status, body } = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=${period}&metrics=temperature_c&as_of=${instant}${quality ? `&quality=${quality}` : ''}`);
          assert.equal(status, 200);
          assert.deepEqual(body.results.map((r: { period_start: string }) => Date.parse(r.period_start)), [...buckets.keys()].sort((a, b) => a - b), `${name} ${period} ${quality}`);
          for (const result of body.results) {
            const values = buckets.get(Date.parse(result.period_start))!;
            assert.equal(result.count, values.length);
            assert.equal(result.temperature_c_count, values.length);
            const mean = values.reduce((a, b) => a + b, 0) / values.length;
            assert.ok(Math.abs(result.temperature_c_mean - mean) < 1e-9, `${name} ${period} mean ${result.temperature_c_mean} vs ${mean}`);
            assert.equal(result.temperature_c_min, Math.min(...values));
            assert.equal(result.temperature_c_max, Math.max(...values));
          }
        }
      }
    }
  });

  it('answers /data/historical/ and /data/compare/ as of the instant too', async () => {
    const at = instants.flagged!;
    const held = log.heldAt(at);
    // The 720 hours before the instant hold every reading; the 24 before it none (they lie days back).
    const month = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&as_of=${at}`);
    assert.equal(month.status, 200);
    assert.equal(month.headers.get('memento-datetime'), new Date(at).toUTCString());
    assert.deepEqual(
      month.body.readings.map((r: { timestamp: string; temperature_c: number; quality_flag: string }) => `${r.timestamp},${r.temperature_c},${r.quality_flag}`),
      expectedRows(held),
    );
    const recent = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=24&as_of=${at}`);
    assert.equal(recent.body.count, 0);
    // As of an instant in the readings' own day, those before it that were recorded by then. The
    // readings were posted after that instant: none, which is what the archive held at that time.
    const inTheDay = new Date(base + 1500 * minute).toISOString();
    const historical = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&as_of=${inTheDay}`);
    assert.equal(historical.body.count, 0);
    const compare = await env().getJson(`/api/v1/data/compare/?stations=${station}&hours=720&as_of=${at}`);
    assert.equal(compare.status, 200);
    assert.equal(compare.headers.get('memento-datetime'), new Date(at).toUTCString());
    const bucketMs = compare.body.interval_seconds * 1000;
    const sums = new Map<number, number[]>();
    for (const r of held) {
      const slot = Date.parse('2000-01-03T00:00:00Z') + Math.floor((r.ts - Date.parse('2000-01-03T00:00:00Z')) / bucketMs) * bucketMs;
      sums.set(slot, [...(sums.get(slot) ?? []), r.temperature_c]);
    }
    compare.body.timestamps.forEach((t: string, i: number) => {
      const values = sums.get(Date.parse(t));
      const got = compare.body.series[station][i];
      if (!values) assert.equal(got, null, t);
      else assert.ok(Math.abs(got - values.reduce((a, b) => a + b, 0) / values.length) < 1e-9, t);
    });
  });

  it('waits, for an instant in the last minute, for a batch of the station still open at that instant', async function () {
    this.timeout(30_000);
    const late = 'asof-late';
    await stationWithKey(env(), late);
    // A batch in flight, as ingest writes one: the station's lock held shared, then a transaction whose
    // readings record its start.
    const batch = new pg.Client({ connectionString: env().databaseUrl });
    await batch.connect();
    try {
      await batch.query('select pg_advisory_lock_shared(7301946, hashtext($1))', [late]);
      await batch.query('begin');
      await batch.query(`insert into readings (station_id, ts, temperature_c) values ($1, now() - interval '1 hour', 7.5)`, [late]);
      const instant = await between();
      let answered = false;
      const read = env().get(`/api/v1/data/download/?station=${late}&as_of=${instant}`).then(async (r) => {
        answered = true;
        return r.text();
      });
      // The read waits for the batch's lock: it must not answer before the batch commits.
      const waiting = async () => (await batch.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and wait_event = 'advisory' and datname = current_database()`)).rows[0]!.n;
      while (!answered && (await waiting()) === 0) await pause(10);
      assert.equal(answered, false, 'the read as of a recent instant did not wait for the batch in flight');
      await batch.query('commit');
      await batch.query('select pg_advisory_unlock_all()');
      assert.deepEqual(csvRows(await read).map((line) => line.split(',')[1]), ['7.5']);
    } finally {
      await batch.end();
    }
  });
});
