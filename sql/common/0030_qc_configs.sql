-- Each station's quality-control configuration (ioos_qc's format), every version kept: a read as of an
-- earlier instant flags readings with the configuration in force then. A null config is a return to the
-- defaults; a station with no row runs the defaults.
create table qc_configs (
  station_id text not null references stations (station_id) on delete cascade,
  set_at timestamptz not null default clock_timestamp(),
  config jsonb,
  primary key (station_id, set_at)
);
