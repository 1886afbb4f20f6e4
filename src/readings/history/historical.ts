import type pg from 'pg';
import { copyOut } from '../db/copyOut.js';
import type { PgPool } from '../db/pool.js';
import { JsonArrayStream } from '../http/jsonArrayStream.js';
import { numericFields, type QualityFlag } from './reading.js';

export type HistoricalArgs = { stationId: string; hours: number; quality?: QualityFlag };

/** Each reading as the API's JSON object, built by PostgreSQL, oldest first. Literals escaped by the driver. */
export function historicalQuery(client: pg.ClientBase, args: HistoricalArgs): string {
  const literal = (value: string) => client.escapeLiteral(value);
  // row_to_json writes compact JSON with the columns in this order; ISO text sorts as time does. The window
  // is `now() - interval '<n> hours'`, a form TimescaleDB turns into a constant while planning, so that only
  // the chunks it reaches are planned: with make_interval() every chunk of the hypertable was, 8 ms of
  // planning for a day of readings on a station-year, growing with the history.
  return `
    select row_to_json(r) from (
      select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "timestamp",
        ${numericFields.join(', ')},
        quality_flag, firmware_version, module_data
      from readings
      where station_id = ${literal(args.stationId)} and ts > now() - interval '${Math.trunc(args.hours)} hours'
        ${args.quality ? `and quality_flag = ${literal(args.quality)}` : ''}
    ) r
    order by r."timestamp"`;
}

/**
 * The historical answer, streamed: 720 hours of a one-minute station is ~11 MB of JSON, which built in
 * memory held megabytes and the event loop per request. `count` follows the readings, since it is known
 * only at their end.
 */
export function streamHistorical(pool: PgPool, args: HistoricalArgs): Promise<JsonArrayStream> {
  const head = `{"station":${JSON.stringify(args.stationId)},"hours":${args.hours},"readings":`;
  return copyOut(pool, (client) => `copy (${historicalQuery(client, args)}) to stdout`, new JsonArrayStream(head, (count) => `,"count":${count}}`));
}
