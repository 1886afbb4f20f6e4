import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { storeReadings } from '../../../src/readings/ingest/store.js';
import { describeEngines } from '../../helpers/app.js';
import { assertRollupExact, flagFilters, periods } from '../../helpers/exactness.js';
import { addStation, countReadings, makeReadings } from '../../helpers/readings.js';

describeEngines('readings store', (env) => {
  it('stores a batch and reports new readings and duplicates', async () => {
    const { db } = env();
    await addStation(db, 'st-basic');
    const batch = makeReadings(500, '2026-03-01T00:00:00Z', 1);
    assert.deepEqual(await storeReadings(db, 'st-basic', batch), { accepted: 500, duplicates: 0, backfilled: db.engine === 'timescale' });
    assert.deepEqual(await storeReadings(db, 'st-basic', batch), { accepted: 0, duplicates: 500, backfilled: false });
    assert.equal(await countReadings(db, 'st-basic'), 500);
  });

  it('counts repeated timestamps inside one batch as duplicates and keeps the first', async () => {
    const { db } = env();
    await addStation(db, 'st-repeat');
    const [first, second] = makeReadings(2, '2026-03-01T00:00:00Z', 1);
    const again = { ...first!, temperature_c: 99.5, quality_flag: 'suspect' as const };
    assert.deepEqual(await storeReadings(db, 'st-repeat', [first!, again, second!]), { accepted: 2, duplicates: 1, backfilled: db.engine === 'timescale' });
    const stored = await db.pool.oneFirst(sql.type(z.object({ t: z.number().nullable() }))`
      select temperature_c as t from readings where station_id = 'st-repeat' and ts = ${first!.ts}
    `);
    assert.equal(stored, first!.temperature_c);
  });

  it('keeps every rollup exact against a GROUP BY over readings, for every period and quality filter', async () => {
    const { db } = env();
    await addStation(db, 'st-exact');
    // Seven weeks every 7 minutes, spanning a month boundary and several Mondays, in uneven batches.
    const all = makeReadings(7 * 7 * 1440 / 7, '2026-01-20T03:17:00Z', 7, 42);
    for (let i = 0; i < all.length; i += 1234) await storeReadings(db, 'st-exact', all.slice(i, i + 1234));
    // Twice: as written (real-time on timescale), then once everything is materialised.
    for (const state of ['written', 'materialised']) {
      if (state === 'materialised') await db.rollups.refresh();
      let buckets = 0;
      for (const period of periods) {
        for (const flags of flagFilters) buckets += await assertRollupExact(db, 'st-exact', period, flags);
      }
      assert.ok(buckets > 1000, `${state}: compared ${buckets} buckets`);
    }
  });

  it('makes a backfill into an old, already materialised period visible at once', async () => {
    const { db } = env();
    await addStation(db, 'st-backfill');
    await storeReadings(db, 'st-backfill', makeReadings(3000, '2026-02-01T00:00:00Z', 10, 7));
    await storeReadings(db, 'st-backfill', makeReadings(2000, '2026-05-01T00:00:00Z', 10, 8));
    // Materialise those periods, so that on timescale the backfill lands below every watermark.
    await db.rollups.refresh();
    // Then a station that was offline sends readings that fall between and inside old buckets.
    const backfill = makeReadings(3000, '2026-02-01T00:05:00Z', 10, 9);
    const result = await storeReadings(db, 'st-backfill', backfill);
    assert.equal(result.accepted, 3000);
    for (const period of periods) {
      for (const flags of flagFilters) await assertRollupExact(db, 'st-backfill', period, flags);
    }
  });

  it('counts readings that arrive in the later hours of a day already materialised', async () => {
    const { db } = env();
    await addStation(db, 'st-later');
    // The first hour of a day, materialised: on timescale the day is now below the daily watermark while
    // its later hours are still above the hourly one.
    await storeReadings(db, 'st-later', makeReadings(60, '2026-08-03T00:00:00Z', 1, 17));
    await db.rollups.refresh();
    await storeReadings(db, 'st-later', makeReadings(600, '2026-08-03T05:00:00Z', 1, 18));
    for (const period of periods) await assertRollupExact(db, 'st-later', period, ['ok', 'suspect', 'invalid']);
    // And once more in a later week of the same month, after everything is materialised again.
    await db.rollups.refresh();
    await storeReadings(db, 'st-later', makeReadings(300, '2026-08-20T10:00:00Z', 1, 19));
    for (const period of periods) {
      for (const flags of flagFilters) await assertRollupExact(db, 'st-later', period, flags);
    }
  });

  it('takes concurrent overlapping batches without duplicates or errors, and the counts add up', async () => {
    const { db } = env();
    await addStation(db, 'st-race');
    const all = makeReadings(6000, '2026-04-01T00:00:00Z', 1, 11);
    // The first two days are materialised beforehand, so that the batches cross the watermarks and
    // their refreshes of overlapping ranges run concurrently.
    await storeReadings(db, 'st-race', all.filter((_, i) => i % 3 === 0 && i < 2880));
    await db.rollups.refresh();
    // Six clients, each sending a window that overlaps its neighbours by half.
    const windows = Array.from({ length: 6 }, (_, i) => all.slice(i * 800, i * 800 + 1600));
    const results = await Promise.all(windows.map((w) => storeReadings(db, 'st-race', w)));
    const accepted = results.reduce((sum, r) => sum + r.accepted, 0);
    const sent = windows.reduce((sum, w) => sum + w.length, 0);
    const stored = await countReadings(db, 'st-race');
    assert.equal(stored, 5600);
    assert.equal(accepted, stored - 960);
    assert.equal(results.reduce((sum, r) => sum + r.duplicates, 0), sent - accepted);
    for (const period of periods) await assertRollupExact(db, 'st-race', period, ['ok', 'suspect', 'invalid']);
  });

  it('moves readings between quality filters when an operator flags a range, and the rollups follow', async () => {
    const { db } = env();
    await addStation(db, 'st-flag');
    await storeReadings(db, 'st-flag', makeReadings(4000, '2026-06-28T00:00:00Z', 5, 13));
    await db.rollups.refresh();
    const { changed } = await recordOverride(db, {
      stationId: 'st-flag', from: '2026-06-29T06:00:00.000Z', to: '2026-07-02T18:30:00.000Z', flag: 'invalid', reason: 'test',
    });
    const expected = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from readings
      where station_id = 'st-flag' and quality_flag = 'invalid'
    `);
    assert.equal(changed, expected);
    assert.ok(changed > 500);
    for (const period of periods) {
      for (const flags of flagFilters) await assertRollupExact(db, 'st-flag', period, flags);
    }
    // Flagging back to ok is the same path.
    await recordOverride(db, { stationId: 'st-flag', from: '2026-06-29T06:00:00.000Z', to: '2026-06-30T00:00:00.000Z', flag: 'ok', reason: 'test' });
    for (const period of periods) await assertRollupExact(db, 'st-flag', period, ['ok']);
  });
});
