import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../db/pool.js';
import { retryOnConflict } from '../../db/errors.js';
import { lockStationExclusively } from '../core/stationLock.js';
import { readingColumnNames } from '../reading.js';

const removed = z.object({ deleted: z.number(), id: z.number() });

// Every column of a reading, as readings and readings_removed both name them.
const keptColumns = sql.join(['station_id', ...readingColumnNames, 'recorded_at'].map((c) => sql.identifier([c])), sql.fragment`, `);

/**
 * Deletes a station's readings in [from, to] (readings stored by mistake: a clock years ahead, a test
 * rig posting under a real station). Serialised with the station's ingest like an override; the rollups
 * follow (portable: in the transaction; timescale: refreshed at once, else healed), and the station's
 * newest-reading mark moves back to what remains. The deletion is logged with its reason, and the readings
 * it removed are kept for reads as of an earlier instant.
 */
export async function deleteReadings(
  db: Db, args: { stationId: string; from: string; to: string; reason?: string },
): Promise<{ deleted: number; refreshed: boolean }> {
  const result = await retryOnConflict(() =>
    db.pool.transaction(async (tx) => {
      const at = await lockStationExclusively(tx, args.stationId);
      // The readings are kept as they were, with the deletion, its reason and when (the instant of the
      // lock), for reads as of an earlier instant.
      const row = await tx.one(sql.type(removed)`
        with removal as (
          insert into reading_removals (station_id, from_ts, to_ts, readings, reason, removed_at)
          values (${args.stationId}, ${args.from}, ${args.to}, 0, ${args.reason ?? 'operator deletion'}, ${at})
          returning id
        ), gone as (
          delete from readings where station_id = ${args.stationId} and ts between ${args.from} and ${args.to}
          returning ${keptColumns}
        ), kept as (
          insert into readings_removed (${keptColumns}, removal_id, removed_at)
          select ${keptColumns}, (select id from removal), ${at}::timestamptz from gone
          returning 1
        )
        select count(*)::int as deleted, (select id from removal) as id from kept
      `);
      await tx.query(sql.type(z.object({}))`update reading_removals set readings = ${row.deleted} where id = ${row.id}`);
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
