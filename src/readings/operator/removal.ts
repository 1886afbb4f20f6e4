import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../db/pool.js';
import { retryOnConflict } from '../../db/errors.js';
import { lockStationExclusively } from '../core/stationLock.js';

const removed = z.object({ deleted: z.number() });

/**
 * Deletes a station's readings in [from, to] (readings stored by mistake: a clock years ahead, a test
 * rig posting under a real station). Serialised with the station's ingest like an override; the rollups
 * follow (portable: in the transaction; timescale: refreshed at once, else healed), and the station's
 * newest-reading mark moves back to what remains.
 */
export async function deleteReadings(db: Db, args: { stationId: string; from: string; to: string }): Promise<{ deleted: number; refreshed: boolean }> {
  const result = await retryOnConflict(() =>
    db.pool.transaction(async (tx) => {
      await lockStationExclusively(tx, args.stationId);
      const row = await tx.one(sql.type(removed)`
        with gone as (
          delete from readings where station_id = ${args.stationId} and ts between ${args.from} and ${args.to} returning 1
        )
        select count(*)::int as deleted from gone
      `);
      await tx.query(sql.type(z.object({}))`
        with newest as (select max(ts) as ts, min(ts) as first_ts from readings where station_id = ${args.stationId}),
        moved as (
          -- A new version without a word on the settled mark: the trigger of 0020 takes a new one.
          update station_latest set ts = newest.ts, first_ts = newest.first_ts, version = nextval('station_data_version') from newest
          where station_latest.station_id = ${args.stationId} and newest.ts is not null
        )
        delete from station_latest where station_id = ${args.stationId} and (select ts from newest) is null
      `);
      return row;
    }),
  );
  const refreshed = await db.rollups.refresh().then(() => true, () => false);
  return { deleted: result.deleted, refreshed };
}
