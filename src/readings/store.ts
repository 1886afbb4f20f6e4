import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { copyText } from '../db/copyText.js';
import type { Db } from '../db/pool.js';
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

export type StoreResult = { accepted: number; duplicates: number };

const insertedRange = z.object({
  accepted: z.number(),
  first: z.string().nullable(),
  last: z.string().nullable(),
});

// Per connection, created once: rows are COPYed here and leave it at commit.
const stagingTable = `
  create temp table if not exists readings_staging (
    ts timestamptz, temperature_c float8, humidity_rh float8, pressure_hpa float8, altitude_m float8,
    pm1_0 float8, pm2_5 float8, pm10 float8, co2_ppm float8, co_ppm float8, uv_index float8,
    quality_flag text, firmware_version text, module_data jsonb
  ) on commit delete rows`;
const withStaging = new WeakSet<pg.PoolClient>();

// Rows go in timestamp order so that concurrent overlapping batches take row locks in the same order.
const insertFromStaging = `
  with inserted as (
    insert into readings (
      station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10,
      co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data
    )
    select $1, s.* from readings_staging s order by s.ts
    on conflict (station_id, ts) do nothing
    returning ts
  )
  select count(*)::int as accepted, min(ts) as first, max(ts) as last from inserted`;

// Deadlocks cannot arise between batches (both lock in timestamp order) but can with the rollup
// rebuild of a concurrent flag override; the transaction is then simply run again.
const retryableStates = new Set(['40P01', '40001']);

/**
 * Stores one station's readings: COPY into a staging table, then one INSERT ... ON CONFLICT DO NOTHING,
 * in one transaction (four round trips whatever the batch size). A (station, timestamp) already present
 * is a duplicate, as is a repeated timestamp within the batch (the first one wins). When it returns,
 * the readings are committed and every rollup includes them (on timescale the touched buckets are
 * refreshed here, after commit).
 */
export async function storeReadings(db: Db, stationId: string, readings: readonly NewReading[]): Promise<StoreResult> {
  const unique = firstPerTimestamp(readings);
  if (unique.length === 0) return { accepted: 0, duplicates: readings.length };
  const text = unique.map(copyLine).join('');
  for (let attempt = 1; ; attempt++) {
    try {
      const inserted = insertedRange.parse(await copyAndInsert(db.copyPool, stationId, text));
      if (inserted.first && inserted.last) await refreshRollups(db, inserted.first, inserted.last);
      return { accepted: inserted.accepted, duplicates: readings.length - inserted.accepted };
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= 5 || !code || !retryableStates.has(code)) throw error;
    }
  }
}

async function copyAndInsert(pool: pg.Pool, stationId: string, text: string): Promise<unknown> {
  const client = await pool.connect();
  try {
    if (!withStaging.has(client)) {
      await client.query(stagingTable);
      withStaging.add(client);
    }
    await client.query('begin');
    await pipeline(Readable.from([text]), client.query(copyFrom('copy readings_staging from stdin')));
    const result = await client.query(insertFromStaging, [stationId]);
    await client.query('commit');
    client.release();
    const row = result.rows[0] as { accepted: number; first: Date | null; last: Date | null };
    return { accepted: row.accepted, first: row.first?.toISOString() ?? null, last: row.last?.toISOString() ?? null };
  } catch (error) {
    // The connection may be mid-COPY or in a failed transaction: discard it rather than reuse it.
    client.release(error as Error);
    throw error;
  }
}

function copyLine(r: NewReading): string {
  return (
    `${r.ts}\t${copyText(r.temperature_c)}\t${copyText(r.humidity_rh)}\t${copyText(r.pressure_hpa)}\t${copyText(r.altitude_m)}` +
    `\t${copyText(r.pm1_0)}\t${copyText(r.pm2_5)}\t${copyText(r.pm10)}\t${copyText(r.co2_ppm)}\t${copyText(r.co_ppm)}` +
    `\t${copyText(r.uv_index)}\t${r.quality_flag}\t${copyText(r.firmware_version)}` +
    `\t${copyText(r.module_data === null ? null : JSON.stringify(r.module_data))}\n`
  );
}

const flagged = z.object({ changed: z.number(), first: z.string().nullable(), last: z.string().nullable() });

/** Operator override of quality_flag for one station over [from, to]; the rollups follow. Returns rows changed. */
export async function flagReadings(
  db: Db,
  args: { stationId: string; from: string; to: string; flag: QualityFlag },
): Promise<number> {
  const result = await db.pool.one(sql.type(flagged)`
    with changed as (
      update readings set quality_flag = ${args.flag}
      where station_id = ${args.stationId} and ts between ${args.from} and ${args.to}
        and quality_flag <> ${args.flag}
      returning ts
    )
    select count(*)::int as changed, min(ts) as first, max(ts) as last from changed
  `);
  if (result.first && result.last) await refreshRollups(db, result.first, result.last);
  return result.changed;
}

/**
 * Makes the rollups exact for readings written between `first` and `last`. The portable engine's
 * triggers did so in the writing transaction; on timescale the buckets that hold the range are
 * re-materialised now, after commit (refresh cannot run inside a transaction), finest first because
 * each rollup is built on the one below.
 */
export async function refreshRollups(db: Db, first: string, last: string): Promise<void> {
  if (db.engine !== 'timescale') return;
  await db.pool.connect(async (connection) => {
    for (const [index, [rollup, width]] of rollupWidths.entries()) {
      await refreshRange(connection, index, rollup, width, first, last);
    }
  });
}

const rollupWidths = [
  ['readings_hourly', '1 hour'],
  ['readings_daily', '1 day'],
  ['readings_weekly', '1 week'],
  ['readings_monthly', '1 month'],
] as const;

// TimescaleDB refuses a refresh whose range overlaps one in progress (55P03), and stations posting
// the same minute always overlap. Refreshes of one rollup therefore queue on a session advisory lock,
// shared by every process on the database; 55P03 can still come from a refresh policy job, and is retried.
const refreshLockBase = 7_301_946_500;
const lockNotAvailable = '55P03';

async function refreshRange(
  connection: CommonQueryMethods,
  index: number,
  rollup: string,
  width: string,
  first: string,
  last: string,
): Promise<void> {
  const lockKey = refreshLockBase + index;
  await connection.query(sql.type(noRows)`select pg_advisory_lock(${lockKey})`);
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        await connection.query(sql.type(noRows)`
          call refresh_continuous_aggregate(
            ${rollup}::regclass,
            time_bucket(${width}::interval, ${first}::timestamptz),
            time_bucket(${width}::interval, ${last}::timestamptz) + ${width}::interval
          )
        `);
        return;
      } catch (error) {
        if (attempt >= 20 || sqlState(error) !== lockNotAvailable) throw error;
        await new Promise((resolve) => setTimeout(resolve, 25 * attempt));
      }
    }
  } finally {
    await connection.query(sql.type(noRows)`select pg_advisory_unlock(${lockKey})`);
  }
}

function sqlState(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 4; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

// CALL returns no rows.
const noRows = z.object({});

function firstPerTimestamp(readings: readonly NewReading[]): NewReading[] {
  const seen = new Set<string>();
  const unique: NewReading[] = [];
  for (const reading of readings) {
    if (seen.has(reading.ts)) continue;
    seen.add(reading.ts);
    unique.push(reading);
  }
  return unique;
}
