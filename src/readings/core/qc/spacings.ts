import type pg from 'pg';
import { timestampArray } from '../../../db/binaryArrays.js';
import { readCopyRow } from '../../../db/copyRow.js';
import type { AsOf } from '../asOf.js';
import { countSpacings, medianSpacing, type SeriesFacts } from './qartod.js';
import { readingsSource } from '../readingsSource.js';

/** A station's spacings before its settled mark's day, as counted at that mark. */
type Kept = {
  mark: string;
  /** The mark's day (settled_before), in microseconds since 1970: the readings counted are those before it. */
  before: number;
  readings: number;
  /** The spacings between those readings, by value in microseconds. */
  spacings: Map<number, number>;
  /** The last of them, in microseconds (NaN: none). */
  last: number;
};

// A station whose readings are spaced in more ways than this (a clock that jitters) is counted at each read.
const maxKeptSpacings = 4_096;

/**
 * The facts of a station's whole series the flat-line test takes (how many readings, their median
 * spacing in whole seconds, as ioos_qc computes them from the whole series given), read in the snapshot
 * of the read they serve. A station's spacings before the day of its settled mark (station_latest's
 * settled_before) are counted once and kept while the mark stands: every write of the service since
 * the mark was taken touched only readings from that day on (migration 0020). The readings from that day
 * on are counted at each read, a day or so of them. A read as of an instant counts the whole series.
 * One instance per service, created with the app: each entry is checked against the mark read in the
 * snapshot it serves, whoever else reads or writes meanwhile.
 */
export class SeriesSpacings {
  private readonly kept = new Map<string, Kept>();

  constructor(private readonly maxStations = 1_024) {}

  async factsOf(client: pg.ClientBase, stationId: string, asOf?: AsOf): Promise<SeriesFacts> {
    return factsFrom(asOf ? await wholeSeriesSpacings(client, stationId, asOf) : await this.spacingsOf(client, stationId));
  }

  /** The station's readings and their spacings, as the archive stands in `client`'s snapshot. */
  async spacingsOf(client: pg.ClientBase, stationId: string): Promise<SeriesSpacingCounts> {
    const row = await readCopyRow(client, {
      text: `select l.settled_version::text, l.settled_before,
               (select array_agg(ts) from (select r.ts from readings r where r.station_id = $1 and r.ts >= l.settled_before order by r.ts) n),
               (select max(r.ts) from readings r where r.station_id = $1 and r.ts < l.settled_before)
             from station_latest l where l.station_id = $1`,
      values: [stationId],
    });
    // No mark: no reading has come through the service.
    if (!row) return wholeSeriesSpacings(client, stationId);
    const [markBytes, beforeBytes, recentBytes, lastBytes] = row;
    const mark = markBytes!.toString();
    const before = timestampOf(beforeBytes!);
    const last = lastBytes ? timestampOf(lastBytes) : NaN;
    let kept = this.kept.get(stationId);
    // Counted again when the mark moved, and when the last reading before its day is not the one counted
    // (readings written past the service, which moves no mark).
    if (!kept || kept.mark !== mark || kept.before !== before || !Object.is(kept.last, last)) {
      kept = await this.count(client, stationId, mark, before);
    }
    const recent = recentBytes ? timestampArray(recentBytes) : new Float64Array(0);
    const spacings = new Map(kept.spacings);
    // The spacing across the mark's day, then those after it.
    if (recent.length > 0 && !Number.isNaN(kept.last)) countSpacings(spacings, Float64Array.of(kept.last, recent[0]!), 1_000_000);
    countSpacings(spacings, recent, 1_000_000);
    return { readings: kept.readings + recent.length, spacings };
  }

  /** Counts the station's spacings before `before` and keeps them under `mark`. */
  private async count(client: pg.ClientBase, stationId: string, mark: string, before: number): Promise<Kept> {
    const row = await readCopyRow(client, {
      text: `select array_agg(ts) from (select r.ts from readings r where r.station_id = $1 and r.ts < $2::timestamptz order by r.ts) b`,
      values: [stationId, microsToIso(before)],
    });
    const times = row?.[0] ? timestampArray(row[0]) : new Float64Array(0);
    const spacings = new Map<number, number>();
    countSpacings(spacings, times, 1_000_000);
    const kept = { mark, before, readings: times.length, spacings, last: times.length ? times[times.length - 1]! : NaN };
    if (spacings.size <= maxKeptSpacings) {
      this.kept.delete(stationId);
      this.kept.set(stationId, kept);
      // The station kept longest ago goes first.
      if (this.kept.size > this.maxStations) this.kept.delete(this.kept.keys().next().value!);
    }
    return kept;
  }
}

/** How many readings a series has, and the spacings between them by value in microseconds. */
export type SeriesSpacingCounts = { readings: number; spacings: Map<number, number> };

const factsFrom = ({ readings, spacings }: SeriesSpacingCounts): SeriesFacts => ({ length: readings, interval: medianSpacing(spacings) });

/** The facts of the station's whole series (as the archive held it at `asOf`), counted from all its timestamps. */
export async function wholeSeriesFacts(client: pg.ClientBase, stationId: string, asOf?: AsOf): Promise<SeriesFacts> {
  return factsFrom(await wholeSeriesSpacings(client, stationId, asOf));
}

/** The station's readings and their spacings (as the archive held them at `asOf`), counted from all its timestamps. */
export async function wholeSeriesSpacings(client: pg.ClientBase, stationId: string, asOf?: AsOf): Promise<SeriesSpacingCounts> {
  const source = `${readingsSource(asOf && '$2', 'array[$1]::text[]')} where r.station_id = $1`;
  const row = await readCopyRow(client, {
    text: `select array_agg(ts) from (select r.ts from ${source} order by r.ts) s`,
    values: asOf ? [stationId, asOf.iso] : [stationId],
  });
  const times = row?.[0] ? timestampArray(row[0]) : new Float64Array(0);
  const spacings = new Map<number, number>();
  countSpacings(spacings, times, 1_000_000);
  return { readings: times.length, spacings };
}

/** A timestamptz in binary format, in microseconds since 1970. */
const timestampOf = (bytes: Buffer) => bytes.readInt32BE(0) * 4_294_967_296 + bytes.readUInt32BE(4) + Date.UTC(2000, 0, 1) * 1000;

/** Microseconds since 1970 as ISO 8601 text to the microsecond, as PostgreSQL reads it. */
const microsToIso = (us: number) => `${new Date(Math.floor(us / 1000)).toISOString().slice(0, -1)}${String(((us % 1000) + 1000) % 1000).padStart(3, '0')}Z`;
