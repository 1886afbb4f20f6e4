import { copyOut, type CopyQuery } from '../../db/copyOut.js';
import type { PgPool } from '../../db/pool.js';
import { JsonArrayStream } from '../../formats/jsonArrayStream.js';
import type { AsOf } from '../core/asOf.js';
import { prefixWidth, qcPrefixColumns, readStarts, RowFlagging, type FlaggedBatch, type QcPrefix } from '../core/qc/columns.js';
import { qcStreams, type QcConfig } from '../core/qc/config.js';
import type { SeriesStart } from '../core/qc/series.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { numericFields, type QualityFlag } from '../reading.js';
import { readingsSource } from '../core/readingsSource.js';

export type HistoricalArgs = {
  stationId: string; hours: number; quality?: QualityFlag; asOf?: AsOf;
  /** The station's quality-control configuration: when given, each reading carries its QARTOD flags. */
  qc?: QcConfig;
  /** The station's series facts kept between reads. */
  spacings?: SeriesSpacings;
};

/**
 * Each reading as the API's JSON object, built by PostgreSQL, oldest first: the hours before now, or
 * before `asOf` as the archive held them then. Flagged (`qc`), the window starts at `start` (an instant
 * the flags' context is read before), every reading of it is read whatever the quality filter, and the
 * prefix columns (tab-separated) come before the JSON.
 */
export function historicalQuery(args: HistoricalArgs, qc?: { start: string; prefix: QcPrefix }): CopyQuery {
  const values: string[] = [args.stationId, `${Math.trunc(args.hours)} hours`];
  const param = (value: string) => `$${values.push(value)}`;
  // The window is `now() - '<n> hours'::interval` (a literal, as COPY takes it), a form TimescaleDB turns
  // into a constant while planning, so that only the chunks it reaches are planned: with make_interval()
  // every chunk of the hypertable was, a cost growing with the history.
  const start = qc ? `${param(qc.start)}::timestamptz` : args.asOf ? `${param(args.asOf.iso)}::timestamptz - $2::interval` : 'now() - $2::interval';
  const source = readingsSource(args.asOf && param(args.asOf.iso), 'array[$1]', start);
  const quality = args.quality ? `quality_flag = ${param(args.quality)}` : null;
  const prefix = qc ? [...qcPrefixColumns(qc.prefix, quality ?? undefined), ...qc.prefix.fields.map((f) => `${qcStreams[f]!.field}::float8`)] : [];
  // row_to_json writes compact JSON with the columns in this order; ISO text sorts as time does.
  const text = `
    select ${[...prefix, 'row_to_json(r)'].join(', ')} from (
      select to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as "timestamp",
        ${numericFields.join(', ')},
        quality_flag, firmware_version, module_data
      from ${source}
      where station_id = $1 and ts > ${start} ${quality && !qc ? `and ${quality}` : ''}
    ) r
    order by r."timestamp"`;
  return { text, values };
}

/**
 * The historical answer, streamed: 720 hours of a one-minute station is ~11 MB of JSON, which built in
 * memory held megabytes and the event loop per request. `count` follows the readings, since it is known
 * only at their end. With `qc`, each reading carries its flags, computed along the rows in their snapshot.
 */
export async function streamHistorical(pool: PgPool, args: HistoricalArgs): Promise<JsonArrayStream> {
  const head = `{"station":${JSON.stringify(args.stationId)},"hours":${args.hours},"readings":`;
  const tail = (count: number) => `,"count":${count}}`;
  const config = args.qc;
  if (!config) return copyOut(pool, historicalQuery(args), 'text', new JsonArrayStream(head, tail));
  const fields = qcStreams.map((_, index) => index);
  const prefix: QcPrefix = { keep: Boolean(args.quality), lead: false, fields };
  const start = new Date((args.asOf ? args.asOf.at.getTime() : Date.now()) - Math.trunc(args.hours) * 3_600_000).toISOString();
  const rows = new FlaggedJsonRows(prefix, args.stationId);
  const body = new JsonArrayStream(head, tail, (lines) => rows.take(lines), () => rows.finish());
  return copyOut(pool, historicalQuery(args, { start, prefix }), 'text', body, async (client) => {
    rows.start(await readStarts(client, { [args.stationId]: config }, fields, { after: start }, args.asOf, args.spacings));
  });
}

/**
 * The rows of a flagged history (the prefix, each metric's value, then the reading's JSON, tab-separated)
 * as the readings' JSON with their QARTOD flags: `<field>_qc` per measured field (its aggregate flag),
 * then `qc`, each tested field's flag per test. A chunk's rows wait for the next chunk, whose first row
 * the last one's spike test looks at.
 */
class FlaggedJsonRows {
  private flagging: RowFlagging<{ json: string[]; keep: Uint8Array | null }> | null = null;
  private readonly width: number;

  constructor(private readonly prefix: QcPrefix, private readonly stationId: string) {
    this.width = prefixWidth(prefix);
  }

  start(starts: Map<string, SeriesStart>): void {
    this.flagging = new RowFlagging(starts, this.stationId, 'all');
  }

  take(lines: string[]): string[] {
    return this.written(this.flagging!.take(this.parsed(lines)));
  }

  finish(): string[] {
    return this.written(this.flagging!.finish());
  }

  private parsed(lines: string[]) {
    const n = lines.length;
    const metrics = this.prefix.fields.length;
    const times = new Float64Array(n);
    const values = Array.from({ length: metrics }, () => new Float64Array(n));
    const json = new Array<string>(n);
    const keep = this.prefix.keep ? new Uint8Array(n) : null;
    lines.forEach((line, r) => {
      const fields = line.split('\t');
      json[r] = fields.at(-1)!;
      times[r] = Date.parse(json[r]!.slice(timestampAt, timestampAt + 24));
      for (let m = 0; m < metrics; m++) {
        const field = fields[this.width + m]!;
        values[m]![r] = field === '\\N' ? NaN : Number(field);
      }
      if (keep) keep[r] = fields[0] === '1' ? 1 : 0;
    });
    return { times, values, payload: { json, keep } };
  }

  private written(flagged: FlaggedBatch<{ json: string[]; keep: Uint8Array | null }>[]): string[] {
    const out: string[] = [];
    for (const { batch: { payload: { json, keep } }, flags } of flagged) {
      for (let r = 0; r < json.length; r++) {
        if (keep && !keep[r]) continue;
        const fields = this.prefix.fields.map((f, m) => `"${qcStreams[f]!.field}_qc":${flags[m]!.aggregate[r]}`);
        const named = this.prefix.fields.flatMap((f, m) => {
          const entries = Object.entries(flags[m]!.tests);
          return entries.length ? [`"${qcStreams[f]!.field}":{${entries.map(([test, flag]) => `"${test}":${flag[r]}`).join(',')}}`] : [];
        });
        out.push(`${json[r]!.slice(0, -1)},${fields.join(',')},"qc":{${named.join(',')}}}`);
      }
    }
    return out;
  }
}

// A row's JSON starts {"timestamp":"<24 characters>"
const timestampAt = '{"timestamp":"'.length;
