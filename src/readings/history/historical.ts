import { copyOut, type CopyQuery } from '../../db/copyOut.js';
import type { PgPool } from '../../db/pool.js';
import { JsonArrayStream } from '../../formats/jsonArrayStream.js';
import type { AsOf } from '../core/asOf.js';
import { numericFields, type QualityFlag } from '../reading.js';

export type HistoricalArgs = { stationId: string; hours: number; quality?: QualityFlag; asOf?: AsOf };

/**
 * Each reading as the API's JSON object, built by PostgreSQL, oldest first: the hours before now, or
 * before `asOf` as the archive held them then.
 */
export function historicalQuery(args: HistoricalArgs): CopyQuery {
  const values: string[] = [args.stationId, `${Math.trunc(args.hours)} hours`];
  const param = (value: string) => `$${values.push(value)}`;
  // The window is `now() - '<n> hours'::interval` (a literal, as COPY takes it), a form TimescaleDB turns
  // into a constant while planning, so that only the chunks it reaches are planned: with make_interval()
  // every chunk of the hypertable was, a cost growing with the history.
  const start = args.asOf ? `${param(args.asOf.iso)}::timestamptz - $2::interval` : 'now() - $2::interval';
  const source = args.asOf ? `envmon_readings_as_of(array[$1], ${start}, 'infinity', $3::timestamptz)` : 'readings';
  const quality = args.quality ? `and quality_flag = ${param(args.quality)}` : '';
  // row_to_json writes compact JSON with the columns in this order; ISO text sorts as time does.
  const text = `
    select row_to_json(r) from (
      select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "timestamp",
        ${numericFields.join(', ')},
        quality_flag, firmware_version, module_data
      from ${source}
      where station_id = $1 and ts > ${start} ${quality}
    ) r
    order by r."timestamp"`;
  return { text, values };
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
