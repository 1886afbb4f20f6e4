import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../db/pool.js';
import { retryOnConflict } from '../../db/errors.js';
import type { QualityFlag } from '../reading.js';
import { lockStationExclusively } from '../core/stationLock.js';

const flagged = z.object({ changed: z.number(), first: z.string().nullable() });

export type OverrideArgs = { stationId: string; from: string; to: string; flag: QualityFlag; reason: string };

/**
 * Records an operator override and applies it to the readings stored in its range; readings of the range
 * that arrive later take it as they are stored. Returns the readings changed now. The rollups follow:
 * at once when their refresh succeeds, else at the service's next healing tick.
 */
export async function recordOverride(db: Db, args: OverrideArgs): Promise<{ changed: number; refreshed: boolean }> {
  const result = await retryOnConflict(() =>
    db.pool.transaction(async (tx) => {
      const at = await lockStationExclusively(tx, args.stationId);
      // A new version without a word on the settled mark: station_latest's trigger takes a new one (0020).
      await tx.query(sql.type(z.object({}))`
        update station_latest set version = nextval('station_data_version') where station_id = ${args.stationId}
      `);
      // The flags it replaces are kept, with when (the instant of the lock), for reads as of an earlier instant.
      return tx.one(sql.type(flagged)`
        with override as (
          insert into quality_overrides (station_id, from_ts, to_ts, flag, reason, created_at)
          values (${args.stationId}, ${args.from}, ${args.to}, ${args.flag}, ${args.reason}, ${at})
          returning id
        ), kept as (
          insert into reading_flags_replaced (station_id, ts, recorded_at, flag, replaced_at, override_id)
          select station_id, ts, recorded_at, quality_flag, ${at}, (select id from override) from readings
          where station_id = ${args.stationId} and ts between ${args.from} and ${args.to} and quality_flag <> ${args.flag}
        ), changed as (
          update readings set quality_flag = ${args.flag}
          where station_id = ${args.stationId} and ts between ${args.from} and ${args.to} and quality_flag <> ${args.flag}
          returning ts
        )
        select count(*)::int as changed, min(ts) as first from changed
      `);
    }),
  );
  // Even when nothing changed now, an earlier run of the same override may have failed before its refresh.
  const refreshed = await db.rollups.refresh().then(() => true, () => false);
  return { changed: result.changed, refreshed };
}

const overrideRow = z.object({
  id: z.number(),
  from_ts: z.string(),
  to_ts: z.string(),
  flag: z.string(),
  reason: z.string(),
  created_at: z.string(),
});
export type OverrideRow = z.infer<typeof overrideRow>;

/** A station's overrides, oldest first. */
export async function listOverrides(db: Db, stationId: string): Promise<readonly OverrideRow[]> {
  return db.pool.any(sql.type(overrideRow)`
    select id, from_ts, to_ts, flag, reason, created_at from quality_overrides where station_id = ${stationId} order by id
  `);
}
