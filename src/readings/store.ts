import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { copyText } from '../db/copyText.js';
import { retryOnConflict, sqlState } from '../db/errors.js';
import { copyClientError, type CopyPool, type Db } from '../db/pool.js';
import { overriddenFlag, overridesSql, stationLockSql, type Override } from './overrides.js';
import { warmUpAfterRefresh } from './warmUp.js';
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

/** `refreshed` is false when the readings are committed but their rollup refresh failed and is left to healing. */
export type StoreResult = { accepted: number; duplicates: number; refreshed: boolean };

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
  select count(*)::int as accepted, min(ts) as first from inserted`;

const uniqueViolation = '23505';

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
 * after the horizon land above every watermark and are already counted (live ingest); older ones are
 * refreshed before this returns, so that aggregates read materialised rollups at once. Should that
 * refresh fail, the readings stay committed (`refreshed: false`): TimescaleDB has logged the buckets
 * as stale, and the next refresh, at the latest the service's healing tick, makes them exact.
 */
export async function storeReadings(db: Db, stationId: string, readings: readonly NewReading[]): Promise<StoreResult> {
  const unique = firstPerTimestamp(readings).sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  if (unique.length === 0) return { accepted: 0, duplicates: readings.length, refreshed: true };
  const inserted = await retryOnConflict(() => copyReadings(db.ingestPool, stationId, unique));
  let refreshed = true;
  if (inserted.first !== null && Date.parse(inserted.first) < horizon()) {
    await db.rollups.refresh().then(
      () => warmUpAfterRefresh(db),
      () => {
        refreshed = false;
      },
    );
  }
  return { accepted: inserted.accepted, duplicates: readings.length - inserted.accepted, refreshed };
}

/** The timescale engine's `envmon_rollup_horizon()`: the start of the hour before the last one. */
function horizon(): number {
  const hour = 3_600_000;
  return Math.floor((Date.now() - hour) / hour) * hour;
}

type Inserted = { accepted: number; first: string | null };

async function copyReadings(pool: CopyPool, stationId: string, readings: NewReading[]): Promise<Inserted> {
  const first = readings[0]!.ts;
  const last = readings.at(-1)!.ts;
  const client = await pool.connect();
  try {
    const opened = (await client.query(
      `begin; ${stationLockSql(client, stationId, 'shared')}; ${overridesSql(client, stationId, first, last)}; savepoint direct`,
    )) as unknown as pg.QueryResult[];
    const overrides = opened[2]!.rows as Override[];
    const station = copyText(stationId);
    const text = readings
      .map((r) => copyLine(station, overrides.length === 0 ? r : { ...r, quality_flag: overriddenFlag(overrides, r.ts, r.quality_flag) }))
      .join('');
    let inserted: Inserted = { accepted: readings.length, first };
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
      const row = (await client.query(insertFromStaging)).rows[0] as { accepted: number; first: Date | null };
      inserted = { accepted: row.accepted, first: row.first?.toISOString() ?? null };
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
    throw copyClientError(client, error);
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
