import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';
import type { PgPool } from '../../../db/pool.js';
import type { AsOf } from '../asOf.js';
import type { QcConfig } from './config.js';
import { qcStreams } from './config.js';
import { indexOfTime, stationQcFlags, untested, type QcRange, type StationFlags } from './flags.js';

/** The column of a metric's aggregate QARTOD flag: `<metric>_qc`. */
export const qcColumnName = (name: string) => `${name}_qc`;

/** The metrics among `columns` (names as a download gives them), as indexes into qcStreams, in the columns' order. */
export const qcStreamsIn = (columns: readonly string[]): number[] =>
  columns.flatMap((column) => {
    const index = qcStreams.findIndex((s) => s.stream === column);
    return index < 0 ? [] : [index];
  });

/** The flags of several stations' readings in a range, each under its own configuration. */
export type QcLookup = Map<string, StationFlags>;

export async function qcLookup(pool: PgPool, configs: Record<string, QcConfig>, range: QcRange, asOf?: AsOf): Promise<QcLookup> {
  const lookup: QcLookup = new Map();
  for (const [stationId, config] of Object.entries(configs)) lookup.set(stationId, await stationQcFlags(pool, stationId, range, config, asOf));
  return lookup;
}

/**
 * The aggregate flags of the reading of `stationId` at `ms` for the metrics `streams`; not evaluated for
 * a reading the flags were not computed for (one that arrived between the two reads of a download).
 */
export function aggregateFlagsAt(lookup: QcLookup, stationId: string, ms: number, streams: readonly number[]): number[] {
  const flags = lookup.get(stationId);
  const index = flags ? indexOfTime(flags.times, ms) : -1;
  return streams.map((s) => (index < 0 ? untested : flags!.streams[s]!.aggregate[index]!));
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
    let out = '';
    let start = 0;
    let quoted = false;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c === 0x22) quoted = !quoted;
      else if (c === 0x0a && !quoted) {
        out += `${this.record(text.slice(start, i))}\n`;
        start = i + 1;
      }
    }
    this.carry = text.slice(start);
    callback(null, out);
  }

  override _flush(callback: TransformCallback): void {
    callback(null, this.carry ? this.record(this.carry) : '');
  }

  private record(line: string): string {
    const first = line.indexOf(',');
    const stationId = this.withStation ? line.slice(0, first) : this.stationId;
    const timestamp = this.withStation ? line.slice(first + 1, line.indexOf(',', first + 1)) : line.slice(0, first);
    return `${line},${aggregateFlagsAt(this.lookup, stationId, Date.parse(timestamp), this.streams).join(',')}`;
  }
}
