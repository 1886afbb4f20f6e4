import type pg from 'pg';
import { copyBinaryIn } from '../../db/copyBinaryIn.js';
import { retryOnConflict, sqlState } from '../../db/errors.js';
import { copyClientError, type Db } from '../../db/pool.js';
import { overrideAt, overridesSql, stationLockSharedSql, unlockStationsSql, type Override } from '../core/stationLock.js';
import type { NewReading } from '../reading.js';
import { flagField, readingColumns } from './columns.js';
import { CopyRows } from './copyRows.js';
import { encodeReadings } from './encoder.js';
import { sourceOfRows, type BatchSource } from './source.js';

/** `backfilled`: readings were stored below the horizon, and the timescale rollups' refresh is under way. */
export type StoreResult = { accepted: number; duplicates: number; backfilled: boolean };

// Per connection, created once: rows wait here when the batch repeats stored readings.
const stagingTable = `create temp table if not exists readings_staging (like readings including defaults) on commit delete rows`;
const withStaging = new WeakSet<pg.PoolClient>();

// Rows go in timestamp order so that concurrent overlapping batches take row locks in the same order.
const insertFromStaging = `
  with inserted as (
    insert into readings (${readingColumns})
    select ${readingColumns} from readings_staging order by ts
    on conflict (station_id, ts) do nothing
    returning ts
  )
  select array_agg((extract(epoch from ts) * 1000)::float8 order by ts) as times from inserted`;

const uniqueViolation = '23505';
const readingsTarget = `readings (${readingColumns})`;

/**
 * Stores readings already parsed (the demo data, the tests' fixtures), and on timescale waits for the
 * refresh of a backfill, so that the rollups themselves are exact when it returns: see storeBatch.
 */
export async function storeReadings(db: Db, stationId: string, readings: readonly NewReading[]): Promise<StoreResult> {
  const stored = await storeBatch(db, stationId, encodeReadings(stationId, readings));
  if (stored.backfilled) await db.rollups.refresh();
  return stored;
}

/**
 * Stores one station's encoded readings in one transaction. A (station, timestamp) already present is a
 * duplicate, as is a repeated timestamp within the batch (the first one wins). Readings inside an
 * operator's override take its flag. When it returns, the readings are committed.
 *
 * Rollups: on portable, triggers make them exact in the same transaction. On timescale, readings at or
 * after the horizon land above every watermark and are already counted (live ingest). Older ones (a
 * backfill) leave a row in rollup_backlog in the same transaction and ask for a refresh soon, without
 * waiting for it: a read of the rollups that meets the backlog row waits for the refresh first, so no
 * reader sees an aggregate without them, and the station is answered at the speed of its COPY.
 */
export async function storeBatch(db: Db, stationId: string, rows: CopyRows): Promise<StoreResult> {
  const source = sourceOfRows(stationId, rows);
  if (source === null) return { accepted: 0, duplicates: 0, backfilled: false };
  const stored = await retryOnConflict(() => writeBatch(db, source));
  if (stored.backfilled) db.rollups.refreshSoon();
  return stored;
}

/** The transaction of one batch, in the order it runs. */
async function writeBatch(db: Db, source: BatchSource): Promise<StoreResult> {
  const client = await db.ingestPool.connect();
  try {
    // 1. The station's lock, shared, before the transaction: an operator's override either sees this
    //    batch or is seen by it, and the transaction's start, which the readings record as their entry
    //    into the archive, follows the last writer that held the lock alone.
    await client.query(stationLockSharedSql, [source.stationId]);
    // The transaction says it decides the station's settled mark itself (step 4), so that the mark's
    // trigger leaves its version as it is.
    await client.query(`begin; select set_config('envmon.settled_decided', 'on', true)`);
    // 2. The overrides whose flags readings inside them take.
    const overrides = (await client.query(overridesSql, [source.stationId])).rows as Override[];
    const tuples = flagged(source.rows, overrides);
    // 3. The rows, straight into readings by COPY; when they meet a stored reading (a re-sent batch, or a
    //    concurrent one), through the staging table and INSERT ... ON CONFLICT DO NOTHING instead.
    await client.query('savepoint direct');
    let inserted: readonly number[];
    try {
      await copyBinaryIn(client, readingsTarget, [tuples]);
      inserted = source.rows.times;
    } catch (error) {
      if (sqlState(error) !== uniqueViolation) throw error;
      await client.query('rollback to savepoint direct');
      inserted = await insertThroughStaging(client, tuples);
    }
    // 4. The station's marks, a backfill's backlog row, the log of new readings and their NOTIFY.
    const backfilled = db.engine === 'timescale' && Date.parse(source.first) < horizon() && inserted.length > 0;
    await client.query(markBatchSql, [source.stationId, source.first, source.last, inserted.length, runsOf(inserted), backfilled]);
    // 5. Commit: the NOTIFY goes out to every instance now; then the lock goes.
    await client.query(`commit; ${unlockStationsSql}`);
    client.release();
    return { accepted: inserted.length, duplicates: source.rows.count + source.repeats - inserted.length, backfilled };
  } catch (error) {
    // The connection may be mid-COPY or in a failed transaction: discard it rather than reuse it.
    client.release(error as Error);
    throw copyClientError(client, error);
  }
}

/** The rows through the staging table: the epoch milliseconds of those inserted, the others being stored already. */
async function insertThroughStaging(client: pg.PoolClient, tuples: Buffer): Promise<number[]> {
  if (!withStaging.has(client)) {
    await client.query(stagingTable);
    withStaging.add(client);
  }
  await copyBinaryIn(client, `readings_staging (${readingColumns})`, [tuples]);
  return ((await client.query(insertFromStaging)).rows[0] as { times: number[] | null }).times ?? [];
}

/** The timescale engine's `envmon_rollup_horizon()`: the start of the hour before the last one. */
function horizon(): number {
  const hour = 3_600_000;
  return Math.floor((Date.now() - hour) / hour) * hour;
}

// The station's settled mark (migrations 0020, 0023): a batch reaching back before settled_before takes a
// new settled_version; any other moves settled_before on, never back, to the day of the station's newest
// reading (the new row gives the batch's). The transaction says it decided, so that the mark's trigger
// leaves the version as it is.
const reachesBack = 'excluded.first_ts < station_latest.settled_before';
const newestDay = "greatest(date_trunc('day', station_latest.ts, 'UTC'), excluded.settled_before)";

/**
 * The end of a batch whose rows are written ($1 station, $2 and $3 the batch's first and last timestamps,
 * $4 how many were inserted, $5 their runs, $6 whether it is a backfill the timescale rollups must take
 * in). The station's marks move out to the batch's bounds (they are its readings, inserted now or
 * stored already) and its data version moves on; the new readings are logged and announced to the live
 * stream (NOTIFY is sent on commit, to every instance).
 */
const markBatchSql = `
  with backlog as (
    insert into rollup_backlog (station_id, first_ts) select $1::text, $2::timestamptz where $6::boolean
  ), latest as (
    insert into station_latest (station_id, ts, first_ts, settled_before)
    values ($1::text, $3::timestamptz, $2::timestamptz, date_trunc('day', $3::timestamptz, 'UTC'))
    on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts),
      first_ts = least(station_latest.first_ts, excluded.first_ts), version = nextval('station_data_version'),
      settled_version = case when ${reachesBack} then nextval('station_data_version') else station_latest.settled_version end,
      settled_before = case when ${reachesBack} then ${newestDay} else greatest(station_latest.settled_before, ${newestDay}) end
    returning version
  ), logged as (
    insert into reading_log (station_id, version, readings, runs)
    select $1::text, version, $4::integer, $5::bigint[] from latest where $4::integer > 0
    returning version
  ), expired as (
    delete from reading_log where station_id = $1::text and logged_at < now() - interval '1 hour'
  )
  select pg_notify('envmon_readings', $1::text || ' ' || version) from logged`;

/**
 * Sorted epoch milliseconds as runs of evenly spaced readings, flattened: first, step, count for each.
 * A station's batch is nearly always one run.
 */
export function runsOf(times: readonly number[]): number[] {
  const runs: number[] = [];
  for (let i = 0; i < times.length;) {
    const first = times[i]!;
    const step = i + 1 < times.length ? times[i + 1]! - first : 0;
    let count = 1;
    while (i + count < times.length && times[i + count]! - times[i + count - 1]! === step) count++;
    runs.push(first, step, count);
    i += count;
  }
  return runs;
}

/** The rows as COPY's tuples, each with the flag of the newest override covering it, where one does. */
function flagged(rows: CopyRows, overrides: readonly Override[]): Buffer {
  if (overrides.length === 0) return rows.bytes(0, rows.count);
  const flaggedRows = new CopyRows();
  for (let i = 0; i < rows.count; i++) {
    const flag = overrideAt(overrides, rows.times[i]!);
    if (flag) flaggedRows.appendWith(rows, i, flagField, flag);
    else flaggedRows.appendFrom(rows, i);
  }
  return flaggedRows.bytes(0, flaggedRows.count);
}
