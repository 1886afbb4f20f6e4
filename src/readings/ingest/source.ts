import { CopyRows } from './copyRows.js';

/** A batch ready for COPY: its rows in timestamp order, each timestamp once. */
export type BatchSource = {
  stationId: string;
  /** The bounds of the batch's timestamps (ISO 8601), for the overrides that reach into it. */
  first: string;
  last: string;
  rows: CopyRows;
  /** Readings left out for repeating an earlier timestamp of the batch. */
  repeats: number;
};

/**
 * A station's encoded rows put in timestamp order with each timestamp once (the first given wins);
 * null when they hold no reading. Stations send in order, so one comparison per reading usually finds
 * nothing to do.
 */
export function sourceOfRows(stationId: string, rows: CopyRows): BatchSource | null {
  const { times } = rows;
  if (times.length === 0) return null;
  let ascending = true;
  for (let i = 1; i < times.length && ascending; i++) ascending = times[i - 1]! < times[i]!;
  let ordered = rows;
  if (!ascending) {
    // Array.prototype.sort is stable: among equal timestamps the first given comes first and is kept.
    const order = times.map((_, i) => i).sort((a, b) => times[a]! - times[b]!);
    ordered = new CopyRows();
    order.forEach((index, i) => {
      if (i === 0 || times[index] !== times[order[i - 1]!]) ordered.appendFrom(rows, index);
    });
  }
  return {
    stationId,
    first: new Date(ordered.times[0]!).toISOString(),
    last: new Date(ordered.times.at(-1)!).toISOString(),
    rows: ordered,
    repeats: rows.count - ordered.count,
  };
}
