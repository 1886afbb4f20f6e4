import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { StationInput } from './schema.js';

export const stationRow = z.object({
  station_id: z.string(),
  name: z.string(),
  location_name: z.string(),
  altitude_m: z.number(),
  latitude: z.number().nullable(),
  longitude: z.number().nullable(),
  status: z.string(),
  interval_seconds: z.number().int(),
});
export type StationRow = z.infer<typeof stationRow>;

/**
 * Creates the station or updates every field of an existing one; an interval not given is 60 s for a new
 * station and left as it was for an existing one.
 */
export async function upsertStation(db: CommonQueryMethods, station: StationInput): Promise<StationRow> {
  const interval = station.interval_seconds ?? null;
  return db.one(sql.type(stationRow)`
    insert into stations (station_id, name, location_name, altitude_m, latitude, longitude, status, interval_seconds)
    values (${station.station_id}, ${station.name}, ${station.location_name}, ${station.altitude_m},
            ${station.latitude}, ${station.longitude}, ${station.status}, coalesce(${interval}::int, 60))
    on conflict (station_id) do update set
      name = excluded.name, location_name = excluded.location_name, altitude_m = excluded.altitude_m,
      latitude = excluded.latitude, longitude = excluded.longitude, status = excluded.status,
      interval_seconds = coalesce(${interval}::int, stations.interval_seconds), updated_at = now()
    returning station_id, name, location_name, altitude_m, latitude, longitude, status, interval_seconds
  `);
}

export async function findStation(db: CommonQueryMethods, stationId: string): Promise<StationRow | null> {
  return db.maybeOne(sql.type(stationRow)`
    select station_id, name, location_name, altitude_m, latitude, longitude, status, interval_seconds from stations where station_id = ${stationId}
  `);
}

export async function stationExists(db: CommonQueryMethods, stationId: string): Promise<boolean> {
  return db.exists(sql.type(z.object({ one: z.number() }))`select 1 as one from stations where station_id = ${stationId}`);
}

const stationFreshnessRow = z.object({
  station_id: z.string(),
  status: z.string(),
  last_seen: z.string().nullable(),
  age_minutes: z.number().nullable(),
});
export type StationFreshnessRow = z.infer<typeof stationFreshnessRow>;

/** Each station's last reading time and its age in minutes, for the health check. */
export async function listStationFreshness(db: CommonQueryMethods): Promise<readonly StationFreshnessRow[]> {
  return db.any(sql.type(stationFreshnessRow)`
    select s.station_id, s.status, last.ts as last_seen,
           -- greatest() skips a null: a station that never posted must keep a null age, never 0.
           case when last.ts is not null
             then round((extract(epoch from greatest(now() - last.ts, interval '0')) / 60)::numeric, 1)
           end as age_minutes
    from stations s
    left join station_latest last on last.station_id = s.station_id
    order by s.station_id
  `);
}
