import type { PgPool } from '../../db/pool.js';
import { prepared } from '../../db/prepared.js';

/** A logged batch: the station's data version it left, when it was logged (epoch ms), how many new readings it stored and their timestamps as runs. */
export type LoggedBatch = { version: number; loggedAt: number; readings: number; runs: number[] };

/** Log rows read at a time. */
export const logPageSize = 100;

/** The station's logged batches after `version`, oldest first, at most logPageSize. */
export async function readLogSince(pool: PgPool, stationId: string, version: number): Promise<LoggedBatch[]> {
  const rows = await logSince.rows(pool, [stationId, version, logPageSize]);
  return rows.map((row) => ({ version: Number(row.version), loggedAt: row.logged_at, readings: Number(row.readings), runs: row.runs.map(Number) }));
}

const logSince = prepared<{ version: string; logged_at: number; readings: number; runs: string[] }>('envmon_log_since', `
  select version, (extract(epoch from logged_at) * 1000)::float8 as logged_at, readings, runs from reading_log
  where station_id = $1 and version > $2 order by version limit $3`);

/** The readings a batch stored, by its runs of timestamps, oldest first. */
export async function readBatchReadings(pool: PgPool, stationId: string, runs: readonly number[]): Promise<Record<string, unknown>[]> {
  const times: string[] = [];
  for (let r = 0; r < runs.length; r += 3) {
    for (let k = 0; k < runs[r + 2]!; k++) times.push(new Date(runs[r]! + k * runs[r + 1]!).toISOString());
  }
  if (times.length === 0) return [];
  return batchReadings.rows(pool, [stationId, times, times[0], times.at(-1)]);
}

const batchReadings = prepared('envmon_batch_readings', 'select * from envmon_batch_readings($1, $2::timestamptz[], $3, $4)');

/** Each station's data version now (0 for a station without readings). */
export async function readCurrentVersions(pool: PgPool, stationIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await currentVersions.rows(pool, [stationIds]);
  return new Map(rows.map((row) => [row.station_id, Number(row.version)]));
}

const currentVersions = prepared<{ station_id: string; version: string }>(
  'envmon_current_versions', 'select station_id, version from station_latest where station_id = any($1::text[])');
