import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
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

const metricColumns = [
  'temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0',
  'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index',
] as const;

const insertedRange = z.object({
  accepted: z.number(),
  first: z.string().nullable(),
  last: z.string().nullable(),
});

/**
 * Stores one station's readings in one statement; a (station, timestamp) already present is a duplicate,
 * as is a repeated timestamp within the batch (the first one wins). When it returns, the readings are
 * committed and every rollup includes them (on timescale the touched buckets are refreshed here).
 */
export async function storeReadings(db: Db, stationId: string, readings: readonly NewReading[]): Promise<StoreResult> {
  const unique = firstPerTimestamp(readings);
  if (unique.length === 0) return { accepted: 0, duplicates: readings.length };
  const tuples = unique.map((r) => [
    r.ts,
    ...metricColumns.map((column) => r[column]),
    r.quality_flag,
    r.firmware_version,
    r.module_data === null ? null : JSON.stringify(r.module_data),
  ]);
  // Rows go in timestamp order so that concurrent overlapping batches take row locks in the same
  // order and cannot deadlock; slonik retries the statement on the rare transaction-rollback error.
  const inserted = await db.pool.one(sql.type(insertedRange)`
    with inserted as (
      insert into readings (
        station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10,
        co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data
      )
      select ${stationId}, t.*
      from ${sql.unnest(tuples, [
        'timestamptz', 'float8', 'float8', 'float8', 'float8', 'float8', 'float8', 'float8',
        'float8', 'float8', 'float8', 'text', 'text', 'jsonb',
      ])} as t (
        ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10,
        co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data
      )
      order by t.ts
      on conflict (station_id, ts) do nothing
      returning ts
    )
    select count(*)::int as accepted, min(ts) as first, max(ts) as last from inserted
  `);
  if (inserted.first && inserted.last) await refreshRollups(db, inserted.first, inserted.last);
  return { accepted: inserted.accepted, duplicates: readings.length - inserted.accepted };
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
 * each rollup is built on the one below. Buckets beyond the watermark are real-time and need nothing,
 * but a refresh of them is cheap and keeps this free of TimescaleDB internals.
 */
export async function refreshRollups(db: Db, first: string, last: string): Promise<void> {
  if (db.engine !== 'timescale') return;
  await refreshRange(db.pool, 'readings_hourly', '1 hour', first, last);
  await refreshRange(db.pool, 'readings_daily', '1 day', first, last);
  await refreshRange(db.pool, 'readings_weekly', '1 week', first, last);
  await refreshRange(db.pool, 'readings_monthly', '1 month', first, last);
}

async function refreshRange(
  pool: CommonQueryMethods,
  rollup: string,
  width: string,
  first: string,
  last: string,
): Promise<void> {
  await pool.query(sql.type(noRows)`
    call refresh_continuous_aggregate(
      ${rollup}::regclass,
      time_bucket(${width}::interval, ${first}::timestamptz),
      time_bucket(${width}::interval, ${last}::timestamptz) + ${width}::interval
    )
  `);
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
