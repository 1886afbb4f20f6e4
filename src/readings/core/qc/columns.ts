import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';
import type { PgPool } from '../../../db/pool.js';
import type { AsOf } from '../asOf.js';
import type { QcConfig } from './config.js';
import { qcStreams } from './config.js';
import { StationQcCursor, untested, type QcRange } from './flags.js';

/** The column of a metric's aggregate QARTOD flag: `<metric>_qc`. */
export const qcColumnName = (name: string) => `${name}_qc`;

/** The metrics among `columns` (names as a download gives them), as indexes into qcStreams, in the columns' order. */
export const qcStreamsIn = (columns: readonly string[]): number[] =>
  columns.flatMap((column) => {
    const index = qcStreams.findIndex((s) => s.stream === column);
    return index < 0 ? [] : [index];
  });

/** The flags of several stations' readings in a range, each under its own configuration, read along a download. */
export type QcLookup = Map<string, StationQcCursor>;

export function qcLookup(pool: PgPool, configs: Record<string, QcConfig>, range: QcRange, asOf?: AsOf): QcLookup {
  return new Map(Object.entries(configs).map(([stationId, config]) => [stationId, new StationQcCursor(pool, stationId, config, range, asOf)]));
}

/** The aggregate flags of the reading of `stationId` at `ms` for the metrics `streams` (readings asked for in time order). */
export function aggregateFlagsAt(lookup: QcLookup, stationId: string, ms: number, streams: readonly number[]): number[] | Promise<number[]> {
  const cursor = lookup.get(stationId);
  if (!cursor) return streams.map(() => untested);
  return cursor.flagsNow(ms, streams) ?? cursor.flagsAt(ms, streams);
}

/**
 * Appends each CSV record's aggregate flags, one column per metric of `streams`, to the rows COPY writes
 * (after the header and comments the caller wrote before): the record's timestamp (its first field, or
 * its second after station_id) names its reading. Record ends are line ends outside double quotes.
 */
export class CsvQcColumns extends Transform {
  private readonly decoder = new StringDecoder('utf8');
  private carry = '';

  constructor(private readonly lookup: QcLookup, private readonly streams: readonly number[], private readonly withStation: boolean, private readonly stationId: string) {
    super();
  }

  override _transform(chunk: Buffer | string, _encoding: BufferEncoding, callback: TransformCallback): void {
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
    this.flagged(records, '\n').then((out) => callback(null, out), callback);
  }

  override _flush(callback: TransformCallback): void {
    this.flagged(this.carry ? [this.carry] : [], '').then((out) => callback(null, out), callback);
  }

  private async flagged(records: string[], end: string): Promise<string> {
    let out = '';
    for (const line of records) {
      const first = line.indexOf(',');
      const stationId = this.withStation ? line.slice(0, first) : this.stationId;
      const timestamp = this.withStation ? line.slice(first + 1, line.indexOf(',', first + 1)) : line.slice(0, first);
      const flags = aggregateFlagsAt(this.lookup, stationId, Date.parse(timestamp), this.streams);
      out += `${line},${(Array.isArray(flags) ? flags : await flags).join(',')}${end}`;
    }
    return out;
  }
}
