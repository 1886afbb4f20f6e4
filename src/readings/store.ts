import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { retryOnConflict, sqlState } from '../db/errors.js';
import { copyClientError, type PgPool, type Db } from '../db/pool.js';
import { overrideAt, overridesSql, stationLockSql, type Override } from './overrides.js';
import { encodeReadings, readingColumns, withFlag } from './batchEncoder.js';
import { sourceOfLines, type BatchSource } from './batchSource.js';
import { CopyLines } from './copyLines.js';
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
  select count(*)::int as accepted, min(ts) as first from inserted`;

const uniqueViolation = '23505';

/**
 * Stores readings already parsed (the demo data, the tests' fixtures), and on timescale waits for the
 * refresh of a backfill, so that the rollups themselves are exact when it returns: see storeBatch.
 */
export async function storeReadings(db: Db, stationId: string, readings: readonly NewReading[]): Promise<StoreResult> {
  const stored = await storeBatch(db, sourceOfLines(stationId, encodeReadings(stationId, readings)));
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
export async function storeBatch(db: Db, source: BatchSource | null): Promise<StoreResult> {
  if (source === null) return { accepted: 0, duplicates: 0, backfilled: false };
  const backlog = db.engine === 'timescale' && Date.parse(source.first) < horizon();
  const inserted = await retryOnConflict(() => copyBatch(db.ingestPool, source, backlog));
  const backfilled = backlog && inserted.accepted > 0;
  if (backfilled) db.rollups.refreshSoon();
  return { accepted: inserted.accepted, duplicates: source.lines.count + source.repeats - inserted.accepted, backfilled };
}

/** The timescale engine's `envmon_rollup_horizon()`: the start of the hour before the last one. */
function horizon(): number {
  const hour = 3_600_000;
  return Math.floor((Date.now() - hour) / hour) * hour;
}

type Inserted = { accepted: number; first: string | null };

async function copyBatch(pool: PgPool, source: BatchSource, backlog: boolean): Promise<Inserted> {
  const client = await pool.connect();
  try {
    const opened = (await client.query(
      `begin; ${stationLockSql(client, source.stationId, 'shared')}; ${overridesSql(client, source.stationId, source.first, source.last)}; savepoint direct`,
    )) as unknown as pg.QueryResult[];
    const overrides = opened[2]!.rows as Override[];
    const lines = overrides.length === 0 ? source.lines : overridden(source.lines, overrides);
    let staged = false;
    try {
      await copyInto(client, `copy readings (${readingColumns}) from stdin`, lines);
    } catch (error) {
      if (sqlState(error) !== uniqueViolation) throw error;
      await client.query('rollback to savepoint direct');
      if (!withStaging.has(client)) {
        await client.query(stagingTable);
        withStaging.add(client);
      }
      await copyInto(client, `copy readings_staging (${readingColumns}) from stdin`, lines);
      staged = true;
    }
    // The batch's newest and oldest timestamps are stored now (inserted) or were already (duplicates):
    // either way they are readings of this station, so its marks can only move out to them.
    const station = client.escapeLiteral(source.stationId);
    const results = (await client.query(
      `${staged ? insertFromStaging : `select ${source.lines.count}::int as accepted, '${source.first}'::timestamptz as first`};
       ${backlog ? `insert into rollup_backlog (station_id, first_ts) values (${station}, '${source.first}');` : ''}
       insert into station_latest (station_id, ts, first_ts) values (${station}, '${source.last}', '${source.first}')
       on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts),
         first_ts = least(station_latest.first_ts, excluded.first_ts), version = excluded.version; commit`,
    )) as unknown as pg.QueryResult[];
    client.release();
    const row = results[0]!.rows[0] as { accepted: number; first: Date | null };
    return { accepted: row.accepted, first: row.first?.toISOString() ?? null };
  } catch (error) {
    // The connection may be mid-COPY or in a failed transaction: discard it rather than reuse it.
    client.release(error as Error);
    throw copyClientError(client, error);
  }
}

/** The lines with the flag of the newest override covering each, where one does. */
function overridden(lines: CopyLines, overrides: readonly Override[]): CopyLines {
  const flagged = new CopyLines();
  for (let i = 0; i < lines.count; i++) {
    const flag = overrideAt(overrides, lines.times[i]!);
    if (flag) flagged.appendLine(withFlag(lines.line(i), flag), lines.times[i]!);
    else flagged.appendFrom(lines, i);
  }
  return flagged;
}

/** Sends the lines in slices of the buffer they were written to, so that no copy of the batch is made. */
function copyInto(client: pg.PoolClient, statement: string, lines: CopyLines): Promise<void> {
  return pipeline(Readable.from(lines.slices()), client.query(copyFrom(statement)));
}
