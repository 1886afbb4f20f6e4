import type { PgPool } from '../db/pool.js';

/** A logged batch: the station's data version it left, when it was logged (epoch ms), how many new readings it stored and their timestamps as runs. */
export type LoggedBatch = { version: number; loggedAt: number; readings: number; runs: number[] };

/** Log rows read at a time. */
export const logPageSize = 100;

/** The station's logged batches after `version`, oldest first, at most logPageSize. */
export async function readLogSince(pool: PgPool, stationId: string, version: number): Promise<LoggedBatch[]> {
  const result = await pool.read<{ version: string; logged_at: number; readings: number; runs: string[] }>({
    name: 'envmon_log_since',
    text: `select version, (extract(epoch from logged_at) * 1000)::float8 as logged_at, readings, runs from reading_log
           where station_id = $1 and version > $2 order by version limit $3`,
    values: [stationId, version, logPageSize],
  });
  return result.rows.map((row) => ({ version: Number(row.version), loggedAt: row.logged_at, readings: Number(row.readings), runs: row.runs.map(Number) }));
}

/** The readings a batch stored, by its runs of timestamps, oldest first. */
export async function readBatchReadings(pool: PgPool, stationId: string, runs: readonly number[]): Promise<Record<string, unknown>[]> {
  const times: string[] = [];
  for (let r = 0; r < runs.length; r += 3) {
    for (let k = 0; k < runs[r + 2]!; k++) times.push(new Date(runs[r]! + k * runs[r + 1]!).toISOString());
  }
  if (times.length === 0) return [];
  const result = await pool.read({
    name: 'envmon_batch_readings',
    text: 'select * from envmon_batch_readings($1, $2::timestamptz[], $3, $4)',
    values: [stationId, times, times[0], times.at(-1)],
  });
  return result.rows;
}

/** Each station's data version now (0 for a station without readings). */
export async function readCurrentVersions(pool: PgPool, stationIds: readonly string[]): Promise<Map<string, number>> {
  const result = await pool.read<{ station_id: string; version: string }>({
    name: 'envmon_current_versions',
    text: 'select station_id, version from station_latest where station_id = any($1::text[])',
    values: [stationIds],
  });
  return new Map(result.rows.map((row) => [row.station_id, Number(row.version)]));
}
