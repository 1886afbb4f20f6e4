import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines } from '../../helpers/app.js';
import { assertRollupExact, flagFilters, periods } from '../../helpers/exactness.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { runJobs } from '../../helpers/rollups.js';

const runs = Number(process.env.FUZZ_RUNS ?? 16);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_128);

const second = 1_000;
const hour = 3_600 * second;
const day = 24 * hour;

// Where a backfill's first and last readings fall: on and around the starts of months, weeks and days (UTC),
// the 1st at 00:00:00 and 00:00:01, the last second of a month.
const monthStart = fc.record({ year: fc.integer({ min: 2003, max: 2020 }), month: fc.integer({ min: 0, max: 11 }) }).map(({ year, month }) => Date.UTC(year, month, 1));
const offset = fc.constantFrom(0, second, -second, 12 * hour, -12 * hour, -day, day, 6 * day, -7 * day);
const span = fc.constantFrom(0, second, hour, 12 * hour, day, day + second, 17 * day, 32 * day, 61 * day, 95 * day);
const backfill = fc.record({ end: monthStart, offset, span, between: fc.nat(40), flagged: fc.boolean() });

describeEngines('backfills whose bounds fall on and around bucket starts (property)', (env) => {
  it(`leave every rollup level equal to a GROUP BY over the readings, after every refresh path (${runs} backfills, FUZZ_SEED=${seed})`, async function () {
    this.timeout(900_000);
    const station = 'bf-bounds';
    const key = await stationWithKey(env(), station);
    // Live readings first, so that every rollup's watermark is near now and every backfill lies below it.
    const now = Date.now();
    const live = Array.from({ length: 30 }, (_, i) => ({ timestamp: new Date(now - 3 * hour - i * 60 * second).toISOString(), temperature_c: i, pm2_5: 7 }));
    await postBatch(env(), key, { station_id: station, readings: live });
    await env().db.rollups.refresh();
    const cases = fc.sample(backfill, { seed, numRuns: runs });
    for (const [n, c] of cases.entries()) {
      const last = c.end + c.offset;
      const first = last - c.span;
      // The first and the last reading, and some between them: a station reconciling a time it was offline.
      const times = [...new Set([first, last, ...Array.from({ length: c.between }, (_, i) => first + Math.floor(((i + 1) * (last - first)) / (c.between + 1)))])];
      const readings = times.map((t, i) => ({ timestamp: new Date(t).toISOString(), temperature_c: (n * 7 + i) % 50, pm2_5: c.flagged && i === 0 ? 2_000 : 5 + i, co2_ppm: 400 + n }));
      const posted = await postBatch(env(), key, { station_id: station, readings });
      if (posted.status !== 201) throw new Error(`case ${n}: ${posted.status} ${JSON.stringify(posted.body)}`);
      // Every refresh path: the one a backfill asks for, the healer's next runs, and the scheduler's jobs.
      await env().db.rollups.refresh();
      await env().db.rollups.refresh();
      if (env().engine === 'timescale') await runJobs(env().db.pool);
      for (const period of periods) {
        for (const flags of flagFilters) {
          try {
            await assertRollupExact(env().db, station, period, flags);
          } catch (error) {
            console.log(`      after backfill ${n} of [${new Date(first).toISOString()}, ${new Date(last).toISOString()}] (FUZZ_SEED=${seed}):`);
            throw error;
          }
        }
      }
    }
  });
});

describeEngines('the refresh of a backfill', (env) => {
  it('checks the monthly level of the backfilled station against its readings, and makes a month that differs again', async function () {
    // Timescale's refresh only: portable's rollups are made in the writing transaction.
    if (env().engine !== 'timescale') this.skip();
    this.timeout(120_000);
    const { db } = env();
    const station = 'bf-check';
    const key = await stationWithKey(env(), station);
    const now = Date.now();
    await postBatch(env(), key, { station_id: station, readings: [{ timestamp: new Date(now - 3 * hour).toISOString(), temperature_c: 1 }] });
    const old = (from: string, count: number) => Array.from({ length: count }, (_, i) => ({ timestamp: new Date(Date.parse(from) + i * hour).toISOString(), temperature_c: i % 30 }));
    await postBatch(env(), key, { station_id: station, readings: old('2019-05-10T00:00:00Z', 48) });
    await db.rollups.refresh();
    // A month of the station gone wrong in the rollup (as the defect of TimescaleDB 2.28 left months), then a
    // backfill of an earlier month: its refresh does not touch the wrong month, the check finds it.
    await db.pool.query(sql.type(z.object({}))`
      update _timescaledb_internal.${sql.identifier([await db.pool.oneFirst(sql.type(z.object({ name: z.string() }))`
        select h.table_name as name from _timescaledb_catalog.continuous_agg c
        join _timescaledb_catalog.hypertable h on h.id = c.mat_hypertable_id where c.user_view_name = 'readings_monthly'`)])}
      set n = n + 5 where station_id = ${station} and bucket = '2019-05-01T00:00:00Z'`);
    await postBatch(env(), key, { station_id: station, readings: old('2019-02-03T00:00:00Z', 10) });
    await db.rollups.refresh();
    for (const flags of flagFilters) await assertRollupExact(db, station, 'month', flags);
  });
});
