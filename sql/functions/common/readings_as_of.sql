-- The readings of `stations` from first_ts (inclusive) to end_ts (exclusive) as the archive held them at `as_of`:
-- those recorded by then and not removed by then, each with the flag in force then (that of the first
-- replacement after it, else the reading's own). At most one reading of a station and timestamp is
-- held at any instant: a timestamp posted again after a deletion was recorded after it. Inlined into
-- the caller's query, so that its order and its bounds reach the scans.
create or replace function envmon_readings_as_of(stations text[], first_ts timestamptz, end_ts timestamptz, as_of timestamptz)
 returns setof readings
 language sql
 stable
as $function$
  select r.station_id, r.ts, r.temperature_c, r.humidity_rh, r.pressure_hpa, r.altitude_m, r.pm1_0, r.pm2_5, r.pm10,
         r.co2_ppm, r.co_ppm, r.uv_index,
         -- Looked up only when an override of the range came after as_of (computed once for the query).
         case when exists (select 1 from reading_flags_replaced
                           where station_id = any(stations) and ts >= first_ts and ts < end_ts and replaced_at > as_of)
           then coalesce((select h.flag from reading_flags_replaced h
                          where h.station_id = r.station_id and h.ts = r.ts and h.recorded_at = r.recorded_at and h.replaced_at > as_of
                          order by h.replaced_at limit 1), r.quality_flag)
           else r.quality_flag end as quality_flag,
         r.firmware_version, r.module_data, r.recorded_at
  from (
    -- Each part in timestamp order, so that the two merge in it (on timescale, the chunks in order)
    -- rather than being sorted again.
    (select * from readings
     where station_id = any(stations) and ts >= first_ts and ts < end_ts and recorded_at <= as_of
     order by ts)
    union all
    (select station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data, recorded_at from readings_removed
     where station_id = any(stations) and ts >= first_ts and ts < end_ts and recorded_at <= as_of and removed_at > as_of
     order by ts)
  ) r
$function$;
