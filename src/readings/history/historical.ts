import { copyOut, type CopyQuery } from '../../db/copyOut.js';
import type { PgPool } from '../../db/pool.js';
import { JsonArrayStream } from '../../formats/jsonArrayStream.js';
import type { AsOf } from '../core/asOf.js';
import type { QcConfig } from '../core/qc/config.js';
import { indexOfTime, stationQcFlags, untested, type StationFlags } from '../core/qc/flags.js';
import { numericFields, type QualityFlag } from '../reading.js';

export type HistoricalArgs = {
  stationId: string; hours: number; quality?: QualityFlag; asOf?: AsOf;
  /** The station's quality-control configuration: when given, each reading carries its QARTOD flags. */
  qc?: QcConfig;
};

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
export async function streamHistorical(pool: PgPool, args: HistoricalArgs): Promise<JsonArrayStream> {
  const head = `{"station":${JSON.stringify(args.stationId)},"hours":${args.hours},"readings":`;
  let decorate: ((row: string) => string) | undefined;
  if (args.qc) {
    // The window as the database will take it, a minute wider: the flags are looked up by timestamp.
    const end = args.asOf ? args.asOf.at.getTime() : Date.now();
    const after = new Date(end - args.hours * 3_600_000 - 60_000).toISOString();
    const flags = await stationQcFlags(pool, args.stationId, { after }, args.qc, args.asOf);
    decorate = (row) => withQcFields(row, flags);
  }
  return copyOut(pool, historicalQuery(args), 'text', new JsonArrayStream(head, (count) => `,"count":${count}}`, decorate));
}

// A row starts {"timestamp":"<24 characters>"
const timestampAt = '{"timestamp":"'.length;

/**
 * A reading's JSON with its QARTOD flags: `<field>_qc` per measured field (its aggregate flag), then
 * `qc`, each tested field's flag per test.
 */
function withQcFields(row: string, flags: StationFlags): string {
  const index = indexOfTime(flags.times, Date.parse(row.slice(timestampAt, timestampAt + 24)));
  const aggregate = flags.streams.map((s) => `"${s.field}_qc":${index < 0 ? untested : s.aggregate[index]}`);
  const tests = flags.streams.flatMap((s) => {
    const named = Object.entries(s.tests).map(([test, f]) => `"${test}":${index < 0 ? untested : f[index]}`);
    return named.length ? [`"${s.field}":{${named.join(',')}}`] : [];
  });
  return `${row.slice(0, -1)},${aggregate.join(',')},"qc":{${tests.join(',')}}}`;
}
