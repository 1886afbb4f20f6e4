import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { sql } from 'slonik';
import { z } from 'zod';
import { copyText } from '../db/copyText.js';
import { refreshRollups } from './rollups.js';
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
