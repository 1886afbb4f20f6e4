import type pg from 'pg';
import { copyBinaryIn } from '../db/copyBinaryIn.js';
import { conflictStates, retryOnConflict, sqlState } from '../db/errors.js';
import { copyClientError, type PgPool, type Db } from '../db/pool.js';
import { overrideAt, overridesSql, stationLockSql, type Override } from './overrides.js';
import { encodeReadings } from './batchEncoder.js';
import { sourceOfRows, wholeBatch, type BatchSource, type PendingBatch } from './batchSource.js';
import { CopyRows } from './copyRows.js';
import { flagField, readingColumns } from './readingColumns.js';
import type { QualityFlag } from './quality.js';

/** A reading ready to store: parsed, timestamp normalised to ISO 8601 UTC, flag assigned. */
export type NewReading = {
  ts: string;
  temperature_c: number | null;
  humidity_rh: number | null;
  pressure_hpa: number | null;
  altitude_m: number | null;
  pm1_0: number | null;
  pm2_5: number | null;
  pm10: number | null;
  co2_ppm: number | null;
  co_ppm: number | null;
  uv_index: number | null;
  quality_flag: QualityFlag;
  firmware_version: string | null;
  module_data: Record<string, unknown> | null;
};

/** `backfilled`: readings were stored below the horizon, and the timescale rollups' refresh is under way. */
export type StoreResult = { accepted: number; duplicates: number; backfilled: boolean };

// Per connection, created once: rows wait here when the batch repeats stored readings.
const stagingTable = `create temp table if not exists readings_staging (like readings) on commit delete rows`;
const withStaging = new WeakSet<pg.PoolClient>();

// Rows go in timestamp order so that concurrent overlapping batches take row locks in the same order.
const insertFromStaging = `
  with inserted as (
    insert into readings (${readingColumns})
    select * from readings_staging order by ts
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
  const stored = await storeBatch(db, wholeBatch(stationId, encodeReadings(stationId, readings)));
  if (stored.backfilled) await db.rollups.refresh();
  return stored;
}

/**
 * Stores one station's readings in one transaction, in a constant number of round trips. A
 * (station, timestamp) already present is a duplicate, as is a repeated timestamp within the batch
 * (the first one wins). Readings inside an operator's override take its flag. When it returns, the
 * readings are committed.
 *
 * Most batches hold only new readings, so they are COPYed straight into `readings`, which is as fast
 * as PostgreSQL takes rows. When that meets a stored reading (a re-sent batch, or a concurrent one)
 * the COPY is rolled back to its savepoint and the batch goes through a staging table and
 * INSERT ... ON CONFLICT DO NOTHING instead.
 *
 * Rollups: on portable, triggers made them exact in the same transaction. On timescale, readings at or
 * after the horizon land above every watermark and are already counted (live ingest). Older ones (a
 * backfill) leave a row in rollup_backlog in the same transaction and ask for a refresh soon, without
 * waiting for it: a read of the rollups that meets the backlog row waits for the refresh first, so no
 * reader sees an aggregate without them, and the station is answered at the speed of its COPY.
 */
export async function storeBatch(db: Db, batch: PendingBatch, known?: KnownShape): Promise<StoreResult> {
  const timescale = db.engine === 'timescale';
  const inserted = await retryOnConflict(() => copyBatch(db.ingestPool, batch, timescale, known));
  if (inserted.backfilled) db.rollups.refreshSoon();
  return inserted;
}

/** What an earlier try found of a batch: it repeats stored readings, or is out of timestamp order. */
export type KnownShape = 'repeats' | 'unordered';

/** A batch whose readings are taken as its body arrives: see storeArriving. */
export type ArrivingBatch = {
  stationId: string;
  rows: CopyRows;
  /**
   * Takes the readings whose bytes have arrived into `rows`, waiting for more bytes when none are new;
   * false once the body is whole and every reading taken. Throws NotArriving when the body is not one
   * to store as it comes, and the body's own failure (too large, cut short) as it is.
   */
  takeMore: () => Promise<boolean>;
};

/** Why an arriving batch was not stored as it came; the whole-body path then stores it from the start. */
export class NotArriving extends Error {
  constructor(readonly why: 'unusual' | 'slow') {
    super(`not stored as it arrives: ${why}`);
  }
}

/**
 * Stores a batch while its body is still arriving, so that the database takes the first readings while
 * the last are on their way: one transaction, COPY fed reading by reading as the bytes come. This is the
 * path of the usual batch (new readings, in order, in the plain envelope, arriving without stalls); on
 * anything else it stores nothing, rolls back, and says why instead of a result: a body of another form
 * or a body too slow to hold a connection for ('unusual', 'slow'), a batch that repeats stored readings
 * ('repeats'), one out of order ('unordered'), or a lock conflict ('conflict'). storeBatch then takes the
 * whole body, knowing what was found. Throws the body's own failure after rolling back.
 */
export async function storeArriving(db: Db, batch: ArrivingBatch): Promise<StoreResult | KnownShape | 'unusual' | 'slow' | 'conflict'> {
  const timescale = db.engine === 'timescale';
  const client = await db.ingestPool.connect();
  let outcome: StoreResult | KnownShape | 'unusual' | 'slow' | 'conflict' | BodyFailure;
  try {
    const overrides = await openBatch(client, batch.stationId, false);
    try {
      await copyBinaryIn(client, readingsTarget, slices(batch.rows, batch.takeMore, overrides));
      outcome = await commitBatch(client, sourceOfRows(batch.stationId, batch.rows), false, timescale);
    } catch (error) {
      const code = sqlState(error);
      const why = error instanceof NotArriving ? error.why : error instanceof BodyFailure ? error : error instanceof OutOfOrder
        ? 'unordered' : code === uniqueViolation ? 'repeats' : code && conflictStates.has(code) ? 'conflict' : null;
      if (why === null) throw error;
      // The COPY was abandoned (CopyFail) or failed on a row: the connection is sound, the transaction aborted.
      await client.query('rollback');
      client.release();
      outcome = why;
    }
  } catch (error) {
    // The connection may be mid-COPY or in a failed transaction: discard it rather than reuse it.
    client.release(error as Error);
    throw copyClientError(client, error);
  }
  if (outcome instanceof BodyFailure) throw outcome.cause;
  if (typeof outcome === 'object' && outcome.backfilled) db.rollups.refreshSoon();
  return outcome;
}

/** The body's own failure met while its readings were being taken, carried out of the COPY. */
class BodyFailure extends Error {
  constructor(override readonly cause: unknown) {
    super('the request body failed');
  }
}

/** The timescale engine's `envmon_rollup_horizon()`: the start of the hour before the last one. */
function horizon(): number {
  const hour = 3_600_000;
  return Math.floor((Date.now() - hour) / hour) * hour;
}

/** Thrown into the COPY when the batch turns out not to be in timestamp order: it is sorted and sent again. */
class OutOfOrder extends Error {}

/** The opening round trip of a batch's transaction: the station's lock taken shared, its overrides read. */
async function openBatch(client: pg.PoolClient, stationId: string, savepoint: boolean): Promise<Override[]> {
  const opened = (await client.query(
    `begin; ${stationLockSql(client, stationId, 'shared')}; ${overridesSql(client, stationId)}${savepoint ? '; savepoint direct' : ''}`,
  )) as unknown as pg.QueryResult[];
  return opened[2]!.rows as Override[];
}

// The station's settled mark (migrations 0020, 0023): a batch reaching back before settled_before takes a
// new settled_version; any other moves settled_before on, never back, to the day of the station's newest
// reading (the new row gives the batch's). The transaction says it decided, so that the mark's trigger
// leaves the version as it is.
const reachesBack = 'excluded.first_ts < station_latest.settled_before';
const newestDay = "greatest(date_trunc('day', station_latest.ts, 'UTC'), excluded.settled_before)";

/**
 * Ends a batch whose rows are written (`staged`: into the staging table, still to be inserted) and
 * releases the connection: the station's marks move out to the batch's bounds and its data version
 * moves on, a backfill on timescale leaves its backlog row, the new readings are logged and announced
 * to the live stream (NOTIFY is sent on commit, to every instance), and the transaction commits. One
 * round trip, two when staged (the inserted readings are known only then). A batch of row errors only
 * (no source) is rolled back.
 */
async function commitBatch(client: pg.PoolClient, source: BatchSource | null, staged: boolean, timescale: boolean): Promise<StoreResult> {
  if (source === null) {
    await client.query('rollback');
    client.release();
    return { accepted: 0, duplicates: 0, backfilled: false };
  }
  // Staged rows meet stored ones: those inserted are told apart by the insert itself.
  const inserted = staged
    ? ((await client.query(insertFromStaging)).rows[0] as { times: number[] | null }).times ?? []
    : source.rows.times;
  // Older than the horizon on timescale: a backfill, which the rollups' refresh must take in.
  const backlog = timescale && Date.parse(source.first) < horizon();
  // The batch's newest and oldest timestamps are stored now (inserted) or were already (duplicates):
  // either way they are readings of this station, so its marks can only move out to them.
  const station = client.escapeLiteral(source.stationId);
  await client.query(
    `${backlog ? `insert into rollup_backlog (station_id, first_ts) values (${station}, '${source.first}');` : ''}
     select set_config('envmon.settled_decided', 'on', true);
     with latest as (
       insert into station_latest (station_id, ts, first_ts, settled_before)
       values (${station}, '${source.last}', '${source.first}', date_trunc('day', '${source.last}'::timestamptz, 'UTC'))
       on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts),
         first_ts = least(station_latest.first_ts, excluded.first_ts), version = nextval('station_data_version'),
         settled_version = case when ${reachesBack} then nextval('station_data_version') else station_latest.settled_version end,
         settled_before = case when ${reachesBack} then ${newestDay} else greatest(station_latest.settled_before, ${newestDay}) end
       returning version
     ), logged as (
       insert into reading_log (station_id, version, readings, runs)
       select ${station}, version, ${inserted.length}, '{${runsOf(inserted).join(',')}}' from latest where ${inserted.length} > 0
       returning version
     ), expired as (
       delete from reading_log where station_id = ${station} and logged_at < now() - interval '1 hour'
     )
     select pg_notify('envmon_readings', ${station} || ' ' || version) from logged;
     commit`,
  );
  client.release();
  const accepted = inserted.length;
  return { accepted, duplicates: source.rows.count + source.repeats - accepted, backfilled: backlog && accepted > 0 };
}

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

async function copyBatch(pool: PgPool, batch: PendingBatch, timescale: boolean, known?: KnownShape): Promise<StoreResult> {
  const client = await pool.connect();
  try {
    const overrides = await openBatch(client, batch.stationId, true);
    let staged = false;
    let source: BatchSource | null;
    const whole = async (direct: boolean) => {
      while (batch.encodeMore());
      source = sourceOfRows(batch.stationId, batch.rows);
      if (source) staged = await copyOrStage(client, flagged(source.rows, 0, source.rows.count, overrides), direct);
    };
    if (known) {
      await whole(known === 'unordered');
    } else {
      try {
        // Stations send in order: the batch is encoded as COPY takes it, one slice while the database parses the last.
        const encodeMore = async () => batch.encodeMore();
        await copyBinaryIn(client, readingsTarget, slices(batch.rows, encodeMore, overrides));
        source = sourceOfRows(batch.stationId, batch.rows);
      } catch (error) {
        if (error instanceof BodyFailure) throw error.cause;
        if (!(error instanceof OutOfOrder) && sqlState(error) !== uniqueViolation) throw error;
        await client.query('rollback to savepoint direct');
        await whole(error instanceof OutOfOrder);
      }
    }
    return await commitBatch(client, source!, staged, timescale);
  } catch (error) {
    // The connection may be mid-COPY or in a failed transaction: discard it rather than reuse it.
    client.release(error as Error);
    throw copyClientError(client, error);
  }
}

/**
 * The batch's rows as `more` encodes them, a slice at a time, each checked to come after the one before;
 * when one does not, OutOfOrder aborts the COPY. Run again (a retried transaction), it sends what is
 * encoded already and goes on from there. A failure of `more` other than NotArriving is the body's.
 */
async function* slices(rows: CopyRows, more: () => Promise<boolean>, overrides: readonly Override[]): AsyncGenerator<Buffer> {
  let sent = 0;
  for (let again = true; again;) {
    try {
      again = await more();
    } catch (error) {
      throw error instanceof NotArriving ? error : new BodyFailure(error);
    }
    for (let i = Math.max(sent, 1); i < rows.count; i++) if (rows.times[i]! <= rows.times[i - 1]!) throw new OutOfOrder();
    if (rows.count > sent) yield flagged(rows, sent, rows.count, overrides);
    sent = rows.count;
  }
}

/**
 * COPYs the rows straight into readings when `direct`, and through the staging table when they meet a
 * stored reading (or when `direct` is false: the COPY already met one). Says whether they were staged.
 */
async function copyOrStage(client: pg.PoolClient, rows: Buffer, direct: boolean): Promise<boolean> {
  if (direct) {
    try {
      await copyBinaryIn(client, readingsTarget, [rows]);
      return false;
    } catch (error) {
      if (sqlState(error) !== uniqueViolation) throw error;
      await client.query('rollback to savepoint direct');
    }
  }
  if (!withStaging.has(client)) {
    await client.query(stagingTable);
    withStaging.add(client);
  }
  await copyBinaryIn(client, `readings_staging (${readingColumns})`, [rows]);
  return true;
}

/** Rows [from, to) as COPY's tuples, each with the flag of the newest override covering it, where one does. */
function flagged(rows: CopyRows, from: number, to: number, overrides: readonly Override[]): Buffer {
  if (overrides.length === 0) return rows.bytes(from, to);
  const flaggedRows = new CopyRows();
  for (let i = from; i < to; i++) {
    const flag = overrideAt(overrides, rows.times[i]!);
    if (flag) flaggedRows.appendWith(rows, i, flagField, flag);
    else flaggedRows.appendFrom(rows, i);
  }
  return flaggedRows.bytes(0, flaggedRows.count);
}

