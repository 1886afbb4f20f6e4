import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';
import type pg from 'pg';
import type { AsOf } from '../asOf.js';
import { qcStreams, type QcConfig, type QcTest } from './config.js';
import type { MetricFlags } from './flagger.js';
import { readSeriesStart, type QcRange, type SeriesStart } from './series.js';
import type { SeriesSpacings } from './spacings.js';

/** The column of a metric's aggregate QARTOD flag: `<metric>_qc`. */
export const qcColumnName = (name: string) => `${name}_qc`;

/** The metrics among `columns` (names as a download gives them), as indexes into qcStreams, in the columns' order. */
export const qcStreamsIn = (columns: readonly string[]): number[] =>
  columns.flatMap((column) => {
    const index = qcStreams.findIndex((s) => s.stream === column);
    return index < 0 ? [] : [index];
  });

/**
 * How a flagged read's rows carry what flagging needs, in columns before their own:
 * - `keep`: whether the answer keeps the row (a quality filter), applied after flagging, since every
 *   reading is a neighbour of the next whatever its quality flag;
 * - `lead`: each row's successor in its station's series (its time in epoch milliseconds, its values of
 *   the metrics flagged), for a read of several stations, whose rows are in time order across them: one
 *   station's row cannot wait for its next reading without holding back every row after it.
 * A read of one station needs no lead: a row is flagged once the next has arrived.
 */
export type QcPrefix = { keep: boolean; lead: boolean; fields: readonly number[] };

/**
 * The prefix columns' SQL, every one a float8: `keep` the condition a row is kept by; with `lead`, the
 * statement defines `window w as (partition by station_id order by ts)`.
 */
export function qcPrefixColumns({ lead, fields }: QcPrefix, keep?: string): string[] {
  return [
    ...(keep ? [`(${keep})::int::float8 as qc_keep`] : []),
    ...(lead ? [
      `round(date_part('epoch', lead(ts) over w) * 1000) as qc_next_ms`,
      ...fields.map((f, i) => `lead(${qcStreams[f]!.field}::float8) over w as qc_next_v${i}`),
    ] : []),
  ];
}

/** How many columns qcPrefixColumns gives. */
export const prefixWidth = ({ keep, lead, fields }: QcPrefix) => (keep ? 1 : 0) + (lead ? 1 + fields.length : 0);

/**
 * Reads on `client`, in the snapshot the rows are then read in, what flagging each station's rows of
 * `range` takes (readSeriesStart), each under its own configuration.
 */
export async function readStarts(
  client: pg.ClientBase, configs: Record<string, QcConfig>, fields: readonly number[], range: QcRange, asOf?: AsOf, spacings?: SeriesSpacings,
): Promise<Map<string, SeriesStart>> {
  const starts = new Map<string, SeriesStart>();
  for (const [stationId, config] of Object.entries(configs)) starts.set(stationId, await readSeriesStart(client, stationId, config, fields, range, asOf, spacings));
  return starts;
}

/** A row of a flagged read: its station, time (ms), values of the metrics flagged, successor (with lead), whether it is answered, and its own text. */
export type QcRecord = {
  station: string; time: number; values: Float64Array; nextTime: number; nextValues: Float64Array | null; keep: boolean; text: string;
};

/** A row with its flags, per metric flagged: the aggregate, and each test's. */
export type FlaggedRecord = { record: QcRecord; aggregate: Uint8Array; tests: Partial<Record<QcTest, number>>[] | null };

/**
 * Flags the rows of a read in their order, each station's by its SeriesFlagger: a batch of rows at a
 * time, grouped by station. Without lead, the last row read waits for the next, which its spike test
 * looks at, and the read's last takes the reading after the range.
 */
export class RecordFlagging {
  private held: QcRecord | null = null;

  constructor(private readonly starts: Map<string, SeriesStart>, private readonly width: number, private readonly lead: boolean, private readonly withTests = false) {}

  /** The rows that can be flagged now, with their flags, in order. */
  take(records: QcRecord[]): FlaggedRecord[] {
    if (this.lead) return this.flagged(records);
    if (records.length === 0) return [];
    const all = this.held ? [this.held, ...records] : records;
    this.held = all.pop()!;
    for (let i = 0; i < all.length; i++) {
      all[i]!.nextTime = all[i + 1]?.time ?? this.held.time;
      all[i]!.nextValues = (all[i + 1] ?? this.held).values;
    }
    return this.flagged(all);
  }

  /** The rows still held, flagged: at the end of the read. */
  finish(): FlaggedRecord[] {
    const last = this.held;
    this.held = null;
    return last ? this.flagged([last]) : [];
  }

  private flagged(records: QcRecord[]): FlaggedRecord[] {
    const out: FlaggedRecord[] = records.map((record) => ({ record, aggregate: new Uint8Array(this.width), tests: this.withTests ? [] : null }));
    const byStation = new Map<string, number[]>();
    records.forEach((r, i) => {
      const list = byStation.get(r.station);
      if (list) list.push(i);
      else byStation.set(r.station, [i]);
    });
    for (const [station, indexes] of byStation) {
      const start = this.starts.get(station);
      if (!start) throw new Error(`no flags for station ${station}`);
      const n = indexes.length;
      const times = new Float64Array(n);
      const nextTimes = new Float64Array(n);
      const values = Array.from({ length: this.width }, () => new Float64Array(n));
      const nextValues = Array.from({ length: this.width }, () => new Float64Array(n));
      indexes.forEach((at, k) => {
        const r = records[at]!;
        times[k] = r.time;
        // A row with no successor in the read (the last of its station) is followed by the reading after the range.
        const next = Number.isNaN(r.nextTime) ? start.after : null;
        nextTimes[k] = next ? next.time : r.nextTime;
        for (let m = 0; m < this.width; m++) {
          values[m]![k] = r.values[m]!;
          nextValues[m]![k] = next ? next.values[m]! : r.nextValues?.[m] ?? NaN;
        }
      });
      const flags = start.flagger.flag({ times, values, next: { times: nextTimes, values: nextValues } });
      indexes.forEach((at, k) => {
        const o = out[at]!;
        for (let m = 0; m < this.width; m++) o.aggregate[m] = flags[m]!.aggregate[k]!;
        if (o.tests) o.tests = flags.map((f) => testsAt(f, k));
      });
    }
    return out;
  }
}

const testsAt = (flags: MetricFlags, k: number) => Object.fromEntries(Object.entries(flags.tests).map(([test, f]) => [test, f[k]!])) as Partial<Record<QcTest, number>>;

/** A number in a CSV field as COPY writes a float8 (empty for NULL): NaN for none. */
const numberOf = (text: string) => (text === '' ? NaN : Number(text));

/** Splits off the first `count` comma-separated fields of a record (none of which holds a comma). */
function leadingFields(record: string, count: number): { fields: string[]; rest: number } {
  const fields: string[] = [];
  let at = 0;
  for (let f = 0; f < count; f++) {
    const comma = record.indexOf(',', at);
    const end = comma < 0 ? record.length : comma;
    fields.push(record.slice(at, end));
    at = end + 1;
  }
  return { fields, rest: at };
}

/** Where a download's CSV records hold a row's station, time and the values of the metrics flagged. */
export type CsvLayout = QcPrefix & {
  /** Whether the record starts with station_id (a download of several stations). */
  withStation: boolean;
  /** The station of a download of one. */
  stationId: string;
  /** Per metric flagged, the position of its value among the record's own fields. */
  valueFields: readonly number[];
};

/**
 * Turns the CSV records COPY writes (the prefix of QcPrefix, then the download's own fields) into the
 * download's records followed by each metric's aggregate flag, one column per metric flagged (after
 * the header and comments the caller wrote before). Record ends are line ends outside double quotes.
 * The flaggers are set by `start`, which reads them in the rows' snapshot before COPY begins.
 */
export class CsvQcColumns extends Transform {
  private readonly decoder = new StringDecoder('utf8');
  private carry = '';
  private flagging: RecordFlagging | null = null;
  private readonly width: number;
  private readonly own: number;

  constructor(private readonly layout: CsvLayout) {
    super();
    this.width = prefixWidth(layout);
    this.own = Math.max(...layout.valueFields, layout.withStation ? 1 : 0) + 1;
  }

  /** The flaggers of the read's stations, read in its snapshot. */
  start(starts: Map<string, SeriesStart>): void {
    this.flagging = new RecordFlagging(starts, this.layout.fields.length, this.layout.lead);
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      const text = this.carry + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
      const records: QcRecord[] = [];
      let start = 0;
      let quoted = false;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x22) quoted = !quoted;
        else if (c === 0x0a && !quoted) {
          records.push(this.parse(text.slice(start, i)));
          start = i + 1;
        }
      }
      this.carry = text.slice(start);
      callback(null, this.written(this.flagging!.take(records)) || undefined);
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      const last = this.carry ? this.flagging!.take([this.parse(this.carry)]) : [];
      callback(null, this.written([...last, ...this.flagging!.finish()]));
    } catch (error) {
      callback(error as Error);
    }
  }

  private parse(line: string): QcRecord {
    const { layout } = this;
    const prefix = leadingFields(line, this.width);
    const text = line.slice(prefix.rest);
    const own = leadingFields(text, this.own).fields;
    const keep = layout.keep ? prefix.fields[0] === '1' : true;
    const lead = layout.keep ? 1 : 0;
    return {
      station: layout.withStation ? own[0]! : layout.stationId,
      time: Date.parse(own[layout.withStation ? 1 : 0]!),
      values: Float64Array.from(layout.valueFields, (f) => numberOf(own[f]!)),
      nextTime: layout.lead ? numberOf(prefix.fields[lead]!) : NaN,
      nextValues: layout.lead ? Float64Array.from(layout.fields, (_, m) => numberOf(prefix.fields[lead + 1 + m]!)) : null,
      keep,
      text,
    };
  }

  private written(flagged: FlaggedRecord[]): string {
    let out = '';
    for (const { record, aggregate } of flagged) if (record.keep) out += `${record.text},${aggregate.join(',')}\n`;
    return out;
  }
}
