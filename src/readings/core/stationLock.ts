import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { QualityFlag } from '../reading.js';

/**
 * Overrides and ingest of one station are serialised on a per-station advisory lock: a batch holds it
 * shared while it writes (batches of a station still run side by side), an override holds it alone.
 * So a batch either commits before the override and is re-flagged by it, or starts after and sees it.
 */
const stationLockSpace = 7_301_946;

/**
 * Takes the station's lock shared, for the session, before the batch's transaction begins: the
 * transaction's start, which its readings record as their entry into the archive (recorded_at), then
 * comes after every writer of the station that held the lock alone (an override, a deletion, a
 * snapshot's instant). Released by unlockStationsSql after the commit, or with the connection.
 */
export const stationLockSharedSql = `select pg_advisory_lock_shared(${stationLockSpace}, hashtext($1))`;

/** Releases the session's station locks (an ingest connection holds one at most). */
export const unlockStationsSql = 'select pg_advisory_unlock_all()';

/**
 * Takes the station's lock alone, for the transaction: no batch of the station writes meanwhile. Returns
 * the instant it was taken (the database's clock), which the change records: every batch recorded
 * before it has committed, and every batch recorded after it starts later.
 */
export async function lockStationExclusively(tx: CommonQueryMethods, stationId: string): Promise<string> {
  return tx.oneFirst(sql.type(z.object({ at: z.string() }))`
    select clock_timestamp() as at from (select pg_advisory_xact_lock(${stationLockSpace}, hashtext(${stationId}))) locked
  `);
}

/** An override as the writing transaction reads it (the driver's Dates). */
export type Override = { from_ts: Date; to_ts: Date; flag: QualityFlag };

/**
 * The station's overrides, oldest first, for the writing transaction (parameter: the station). All of
 * them: a station has a handful (an operator's corrections).
 */
export const overridesSql = 'select from_ts, to_ts, flag from quality_overrides where station_id = $1 order by id';

/** The flag of the newest override covering `at` (epoch ms), which a reading then must carry; null when none covers it. */
export function overrideAt(overrides: readonly Override[], at: number): QualityFlag | null {
  for (let i = overrides.length - 1; i >= 0; i--) {
    const o = overrides[i]!;
    if (o.from_ts.getTime() <= at && at <= o.to_ts.getTime()) return o.flag;
  }
  return null;
}
