import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';
import type pg from 'pg';
import type { AsOf } from '../asOf.js';
import { qcStreams, type QcConfig, type QcTest } from './config.js';
import type { KeptTests, MetricFlags, Successor, Successors } from './flagger.js';
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

/**
 * A batch of a flagged read's rows, in their order, column by column: time (ms), each flagged metric's
 * value (NaN for none), and with lead each row's station and successor (its time NaN for a station's
 * last row of the read). `payload` is what the reader answers with, carried along.
 */
export type RowBatch<P> = {
  times: Float64Array; values: Float64Array[]; payload: P;
  stations?: string[]; next?: Successors;
};

/** A batch with its flags, per metric flagged: each row's aggregate, and each test's. */
export type FlaggedBatch<P> = { batch: RowBatch<P>; flags: MetricFlags[] };

/**
 * Flags the rows of a read in their order, each station's by its SeriesFlagger, a batch at a time.
 * Without lead (one station), a batch waits for the next, whose first row its last row's spike test
 * looks at, and the read's last batch takes the reading after the range. With lead, a batch's rows
 * are flagged at once, each station's gathered, a station's last row followed by the reading after the
 * range.
 */
export class RowFlagging<P> {
  private held: RowBatch<P> | null = null;

  /** `kept`: the tests whose own flags the read gives beside the aggregate. */
  constructor(private readonly starts: Map<string, SeriesStart>, private readonly stationId: string, private readonly kept: KeptTests = []) {}

  /** The batches that can be flagged now, with their flags, in order. */
  take(batch: RowBatch<P>): FlaggedBatch<P>[] {
    if (batch.stations) return [{ batch, flags: this.gathered(batch) }];
    if (batch.times.length === 0) return [];
    const held = this.held;
    this.held = batch;
    return held ? [this.flagged(held, { time: batch.times[0]!, values: batch.values.map((v) => v[0]!) })] : [];
  }

  /** The batch still held, flagged: at the end of the read. */
  finish(): FlaggedBatch<P>[] {
    const held = this.held;
    this.held = null;
    const after = this.start(this.stationId).after;
    return held ? [this.flagged(held, after ?? { time: NaN, values: held.values.map(() => NaN) })] : [];
  }

  private start(station: string): SeriesStart {
    const start = this.starts.get(station);
    if (!start) throw new Error(`no flags for station ${station}`);
    return start;
  }

  private flagged(batch: RowBatch<P>, after: Successor): FlaggedBatch<P> {
    return { batch, flags: this.start(this.stationId).flagger.flag({ times: batch.times, values: batch.values, after }, this.kept) };
  }

  /** A batch of several stations' rows flagged: each station's rows gathered, flagged, and put back in place. */
  private gathered(batch: RowBatch<P>): MetricFlags[] {
    const n = batch.times.length;
    const width = batch.values.length;
    const out: MetricFlags[] = batch.values.map(() => ({ tests: {}, aggregate: new Uint8Array(n) }));
    const byStation = new Map<string, number[]>();
    batch.stations!.forEach((station, i) => {
      const list = byStation.get(station);
      if (list) list.push(i);
      else byStation.set(station, [i]);
    });
    for (const [station, rows] of byStation) {
      const { flagger, after } = this.start(station);
      const pick = (column: Float64Array) => {
        const out = new Float64Array(rows.length);
        for (let k = 0; k < rows.length; k++) out[k] = column[rows[k]!]!;
        return out;
      };
      const nextTimes = pick(batch.next!.times);
      const nextValues = batch.next!.values.map(pick);
      // A station's last row of the read is followed by the reading after the range.
      rows.forEach((_, k) => {
        if (!Number.isNaN(nextTimes[k]!)) return;
        nextTimes[k] = after?.time ?? NaN;
        for (let m = 0; m < width; m++) nextValues[m]![k] = after?.values[m] ?? NaN;
      });
      const flags = flagger.flag({ times: pick(batch.times), values: batch.values.map(pick), next: { times: nextTimes, values: nextValues } }, this.kept);
      flags.forEach((f, m) => {
        rows.forEach((i, k) => { out[m]!.aggregate[i] = f.aggregate[k]!; });
        for (const [test, values] of Object.entries(f.tests) as [QcTest, Uint8Array][]) {
          const all = (out[m]!.tests[test] ??= new Uint8Array(n));
          rows.forEach((i, k) => { all[i] = values[k]!; });
        }
      });
    }
    return out;
  }
}

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

/** A CSV download's rows of a chunk: each record's own text, and whether the answer keeps it. */
type CsvPayload = { texts: string[]; keep: Uint8Array | null };

/**
 * Turns the CSV records COPY writes (the prefix of QcPrefix, then the download's own fields) into the
 * download's records followed by each metric's aggregate flag, one column per metric flagged (after
 * the header and comments the caller wrote before). Record ends are line ends outside double quotes.
 * The flaggers are set by `start`, which reads them in the rows' snapshot before COPY begins.
 */
export class CsvQcColumns extends Transform {
  private readonly decoder = new StringDecoder('utf8');
  private carry = '';
  private flagging: RowFlagging<CsvPayload> | null = null;
  private readonly width: number;
  private readonly own: number;

  constructor(private readonly layout: CsvLayout) {
    super();
    this.width = prefixWidth(layout);
    this.own = Math.max(...layout.valueFields, layout.withStation ? 1 : 0) + 1;
  }

  /** The flaggers of the read's stations, read in its snapshot. */
  start(starts: Map<string, SeriesStart>): void {
    this.flagging = new RowFlagging(starts, this.layout.stationId);
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
    try {
      const text = this.carry + (typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
      const records: string[] = [];
      let start = 0;
      let quoted = false;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === 0x22) quoted = !quoted;
        else if (c === 0x0a && !quoted) {
          records.push(text.slice(start, i));
          start = i + 1;
        }
      }
      this.carry = text.slice(start);
      callback(null, this.written(this.flagging!.take(this.parsed(records))) || undefined);
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      const last = this.carry ? this.flagging!.take(this.parsed([this.carry])) : [];
      callback(null, this.written([...last, ...this.flagging!.finish()]));
    } catch (error) {
      callback(error as Error);
    }
  }

  /** The records as a batch: the prefix read off, the time and the flagged metrics' values read from their fields. */
  private parsed(records: string[]): RowBatch<CsvPayload> {
    const { layout } = this;
    const n = records.length;
    const metrics = layout.fields.length;
    const times = new Float64Array(n);
    const values = Array.from({ length: metrics }, () => new Float64Array(n));
    const texts = new Array<string>(n);
    const keep = layout.keep ? new Uint8Array(n) : null;
    const stations = layout.withStation ? new Array<string>(n) : undefined;
    const next = layout.lead ? { times: new Float64Array(n), values: Array.from({ length: metrics }, () => new Float64Array(n)) } : undefined;
    const leadAt = layout.keep ? 1 : 0;
    for (let r = 0; r < n; r++) {
      const line = records[r]!;
      const prefix = leadingFields(line, this.width);
      const text = line.slice(prefix.rest);
      const own = leadingFields(text, this.own).fields;
      texts[r] = text;
      if (keep) keep[r] = prefix.fields[0] === '1' ? 1 : 0;
      if (stations) stations[r] = own[0]!;
      times[r] = Date.parse(own[layout.withStation ? 1 : 0]!);
      for (let m = 0; m < metrics; m++) values[m]![r] = numberOf(own[layout.valueFields[m]!]!);
      if (next) {
        next.times[r] = numberOf(prefix.fields[leadAt]!);
        for (let m = 0; m < metrics; m++) next.values[m]![r] = numberOf(prefix.fields[leadAt + 1 + m]!);
      }
    }
    return { times, values, payload: { texts, keep }, stations, next };
  }

  private written(flagged: FlaggedBatch<CsvPayload>[]): string {
    let out = '';
    for (const { batch, flags } of flagged) {
      const { texts, keep } = batch.payload;
      for (let r = 0; r < texts.length; r++) {
        if (keep && !keep[r]) continue;
        let line = texts[r]!;
        for (const f of flags) line += `,${f.aggregate[r]}`;
        out += `${line}\n`;
      }
    }
    return out;
  }
}
