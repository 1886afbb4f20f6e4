import { copyOut, type CopyQuery } from '../../db/copyOut.js';
import type { PgPool } from '../../db/pool.js';
import { JsonArrayStream } from '../../formats/jsonArrayStream.js';
import { numericFields, type QualityFlag } from '../reading.js';

export type HistoricalArgs = { stationId: string; hours: number; quality?: QualityFlag };

/** Each reading as the API's JSON object, built by PostgreSQL, oldest first. */
export function historicalQuery(args: HistoricalArgs): CopyQuery {
  // row_to_json writes compact JSON with the columns in this order; ISO text sorts as time does. The window
  // is `now() - '<n> hours'::interval` (a literal, as COPY takes it), a form TimescaleDB turns into a
  // constant while planning, so that only the chunks it reaches are planned: with make_interval() every
  // chunk of the hypertable was, a cost growing with the history.
  const text = `
    select row_to_json(r) from (
      select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "timestamp",
        ${numericFields.join(', ')},
        quality_flag, firmware_version, module_data
      from readings
      where station_id = $1 and ts > now() - $2::interval ${args.quality ? 'and quality_flag = $3' : ''}
    ) r
    order by r."timestamp"`;
  return { text, values: [args.stationId, `${Math.trunc(args.hours)} hours`, ...(args.quality ? [args.quality] : [])] };
}

/**
 * The historical answer, streamed: 720 hours of a one-minute station is ~11 MB of JSON, which built in
 * memory held megabytes and the event loop per request. `count` follows the readings, since it is known
 * only at their end.
 */
export function streamHistorical(pool: PgPool, args: HistoricalArgs): Promise<JsonArrayStream> {
  const head = `{"station":${JSON.stringify(args.stationId)},"hours":${args.hours},"readings":`;
  return copyOut(pool, historicalQuery(args), 'text', new JsonArrayStream(head, (count) => `,"count":${count}}`));
}
