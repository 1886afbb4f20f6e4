import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { sql } from 'slonik';
import { z } from 'zod';
import { copyText } from '../db/copyText.js';
import { sqlState } from '../db/errors.js';
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

const readingColumns =
  'station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data';

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
  select count(*)::int as accepted, min(ts) as first, max(ts) as last from inserted`;

const uniqueViolation = '23505';
// A deadlock cannot arise between batches (both lock in timestamp order) but can with the rollup
// rebuild of a concurrent flag override; the transaction is then simply run again.
const retryableStates = new Set(['40P01', '40001']);

/**
 * Stores one station's readings in one transaction, in a constant number of round trips. A
 * (station, timestamp) already present is a duplicate, as is a repeated timestamp within the batch
 * (the first one wins). When it returns, the readings are committed and every rollup includes them.
 *
 * Most batches hold only new readings, so they are COPYed straight into `readings`, which is as fast
 * as PostgreSQL takes rows. When that meets a stored reading (a re-sent batch, or a concurrent one)
 * the COPY is rolled back to its savepoint and the batch goes through a staging table and
 * INSERT ... ON CONFLICT DO NOTHING instead.
 */
export async function storeReadings(db: Db, stationId: string, readings: readonly NewReading[]): Promise<StoreResult> {
  const unique = firstPerTimestamp(readings).sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  if (unique.length === 0) return { accepted: 0, duplicates: readings.length };
  const station = copyText(stationId);
  const text = unique.map((r) => copyLine(station, r)).join('');
  for (let attempt = 1; ; attempt++) {
    try {
      const inserted = await copyReadings(db.copyPool, stationId, text, unique.length, unique[0]!.ts, unique.at(-1)!.ts);
      if (inserted.first && inserted.last) await refreshRollups(db, inserted.first, inserted.last);
      return { accepted: inserted.accepted, duplicates: readings.length - inserted.accepted };
    } catch (error) {
      const code = sqlState(error);
      if (attempt >= 5 || !code || !retryableStates.has(code)) throw error;
    }
  }
}

type Inserted = { accepted: number; first: string | null; last: string | null };

async function copyReadings(pool: pg.Pool, stationId: string, text: string, count: number, first: string, last: string): Promise<Inserted> {
  const client = await pool.connect();
  try {
    await client.query('begin; savepoint direct');
    let inserted: Inserted = { accepted: count, first, last };
    try {
      await copyInto(client, `copy readings (${readingColumns}) from stdin`, text);
    } catch (error) {
      if (sqlState(error) !== uniqueViolation) throw error;
      await client.query('rollback to savepoint direct');
      if (!withStaging.has(client)) {
        await client.query(stagingTable);
        withStaging.add(client);
      }
      await copyInto(client, 'copy readings_staging from stdin', text);
      const row = (await client.query(insertFromStaging)).rows[0] as { accepted: number; first: Date | null; last: Date | null };
      inserted = { accepted: row.accepted, first: row.first?.toISOString() ?? null, last: row.last?.toISOString() ?? null };
    }
    // The batch's newest timestamp is stored now (inserted) or was already (a duplicate): either way it
    // is a reading of this station, so the newest-reading mark can only move forward to it.
    await client.query(
      `insert into station_latest (station_id, ts) values (${client.escapeLiteral(stationId)}, ${client.escapeLiteral(last)})
       on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts); commit`,
    );
    client.release();
    return inserted;
  } catch (error) {
    // The connection may be mid-COPY or in a failed transaction: discard it rather than reuse it.
    client.release(error as Error);
    throw error;
  }
}

function copyInto(client: pg.PoolClient, statement: string, text: string): Promise<void> {
  return pipeline(Readable.from([text]), client.query(copyFrom(statement)));
}

// Numbers need no escaping in COPY's text format; only the free-text columns go through copyText.
const n = (value: number | null) => (value === null ? '\\N' : value);

function copyLine(station: string, r: NewReading): string {
  return (
    `${station}\t${r.ts}\t${n(r.temperature_c)}\t${n(r.humidity_rh)}\t${n(r.pressure_hpa)}\t${n(r.altitude_m)}` +
    `\t${n(r.pm1_0)}\t${n(r.pm2_5)}\t${n(r.pm10)}\t${n(r.co2_ppm)}\t${n(r.co_ppm)}\t${n(r.uv_index)}` +
    `\t${r.quality_flag}\t${copyText(r.firmware_version)}` +
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
