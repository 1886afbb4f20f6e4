import type pg from 'pg';
import type { z } from 'zod';
import type { PgPool } from '../../db/pool.js';
import { prepared } from '../../db/prepared.js';
import { stationRow } from '../../stations/queries.js';
import { readingRow } from '../reading.js';

const stationWithLatestRow = stationRow.extend({
  latest: readingRow.nullable(),
});
export type StationWithLatestRow = z.infer<typeof stationWithLatestRow>;

/**
 * Every station with its most recent reading, in one query: each reading is looked up as the latest one is
 * (envmon_latest_reading, migration 0011), by the timestamp station_latest names, as a value known when
 * its lookup is planned. On timescale a join on that timestamp could leave out chunks only at run time:
 * each request planned every chunk of readings, a cost growing with the history.
 */
export async function listStationsWithLatest(pool: PgPool): Promise<readonly StationWithLatestRow[]> {
  return stationWithLatestRow.array().parse(await stationList.rows(pool));
}

const stationList = prepared('envmon_station_list', `
  select s.station_id, s.name, s.location_name, s.altitude_m, s.latitude, s.longitude, s.status, s.interval_seconds,
         to_jsonb(latest) as latest
  from stations s
  left join lateral envmon_latest_reading(s.station_id) latest on true
  order by s.station_id`);

/**
 * The station's most recent reading, or null when it has none: one round trip to a prepared statement
 * (envmon_latest_reading looks the reading up by the timestamp station_latest names), on the read
 * pool, with the driver's own types. The hottest read of the service.
 */
export async function findLatestReading(pool: PgPool, stationId: string): Promise<Record<string, unknown> | null> {
  return (await latestReading.rows(pool, [stationId]))[0] ?? null;
}

/** findLatestReading on a connection already held (to prepare it). */
export async function findLatestReadingOn(client: pg.ClientBase, stationId: string): Promise<Record<string, unknown> | null> {
  return (await latestReading.rowsOn(client, [stationId]))[0] ?? null;
}

const latestReading = prepared('envmon_latest_reading', 'select * from envmon_latest_reading($1)');
