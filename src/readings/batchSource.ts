import { CopyLines } from './copyLines.js';

/** A batch on its way in: `encodeMore` encodes its next readings into `lines` and says whether any remain. */
export type PendingBatch = { stationId: string; lines: CopyLines; encodeMore: () => boolean };

/** Lines encoded whole already (the demo data, the tests' fixtures). */
export const wholeBatch = (stationId: string, lines: CopyLines): PendingBatch => ({ stationId, lines, encodeMore: () => false });

/** A batch ready for COPY: its lines in timestamp order, each timestamp once. */
export type BatchSource = {
  stationId: string;
  /** The bounds of the batch's timestamps (ISO 8601), for the overrides that reach into it. */
  first: string;
  last: string;
  lines: CopyLines;
  /** Readings left out for repeating an earlier timestamp of the batch. */
  repeats: number;
};

/**
 * A station's encoded lines put in timestamp order with each timestamp once (the first given wins);
 * null when they hold no reading. Stations send in order, so one comparison per reading usually finds
 * nothing to do.
 */
export function sourceOfLines(stationId: string, lines: CopyLines): BatchSource | null {
  const { times } = lines;
  if (times.length === 0) return null;
  let ascending = true;
  for (let i = 1; i < times.length && ascending; i++) ascending = times[i - 1]! < times[i]!;
  let ordered = lines;
  if (!ascending) {
    // Array.prototype.sort is stable: among equal timestamps the first given comes first and is kept.
    const order = times.map((_, i) => i).sort((a, b) => times[a]! - times[b]!);
    ordered = new CopyLines();
    order.forEach((index, i) => {
      if (i === 0 || times[index] !== times[order[i - 1]!]) ordered.appendFrom(lines, index);
    });
  }
  return {
    stationId,
    first: new Date(ordered.times[0]!).toISOString(),
    last: new Date(ordered.times.at(-1)!).toISOString(),
    lines: ordered,
    repeats: lines.count - ordered.count,
  };
}
