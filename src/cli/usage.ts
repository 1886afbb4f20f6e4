/** A wrong command line; main prints it with the usage and exits 2. */
export class UsageError extends Error {}

export const usage = `usage: envmon <command>

commands:
  serve [--demo]                 run the HTTP server (--demo: load demo data first into an empty database,
                                 then post a reading per active demo station every minute)
  migrate                        apply pending migrations
  demo                           load demo stations, 30 days of readings and demo content into an empty database
  stations add ID --name N --location-name L --altitude M [--lat X --lon Y] [--status S]
  keys issue ID [--label TEXT]   create an API key for station ID (printed once, on the last line);
                                 the label says what holds it (a device) and shows in keys list
  keys list ID                   list the key ids of station ID
  keys revoke KEY_ID             revoke a key at once
  import FILE.json               create or update content from a content file (all or nothing)
  flag --station ID --from T --to T --flag invalid|ok|suspect [--reason TEXT]
                                 override quality_flag for a time range, also for readings that
                                 arrive later; aggregates follow
  flag --list ID                 list station ID's overrides
  readings delete --station ID --from T --to T [--reason TEXT]
                                 delete readings stored by mistake; aggregates follow, and reads
                                 as_of an earlier instant still see them
  snapshots list                 list the snapshots: id, as_of, rows, query
  snapshots verify [ID]          make each snapshot's files (or one's) again and compare their SHA-256
                                 with those recorded (exit 1 if any differs)
  qc show ID                     print the QARTOD tests station ID's readings are flagged by (ioos_qc's
                                 configuration format; the defaults unless it has its own)
  qc set ID FILE [--reason TEXT] give station ID its own configuration from FILE (JSON in that format)
  qc reset ID [--reason TEXT]    return station ID to the default configuration; /data/changes/ lists
                                 either with its reason
  rollups verify [--station ID] [--repair]
                                 check every rollup level against a GROUP BY over the readings;
                                 --repair makes the buckets that differ again (exit 1 if any still differ)`;
