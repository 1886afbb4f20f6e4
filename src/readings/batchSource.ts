import type { BatchEncoder, EncodedBatch } from './batchEncoder.js';

/**
 * A batch on its way into COPY: its lines in timestamp order, each timestamp once, a chunk at a time.
 * `chunks` may encode as it goes, so that the database takes one chunk while the next is encoded; it can
 * be run through again (a retried transaction), and once it has been, `lines` and `timestamps` are whole.
 */
export type BatchSource = {
  stationId: string;
  /** The bounds of the batch's timestamps, for the overrides that reach into it. */
  first: string;
  last: string;
  chunks: () => Iterable<readonly string[]>;
  lines: readonly string[];
  timestamps: readonly string[];
  /** Readings left out for repeating an earlier timestamp of the batch. */
  repeats: number;
};

const chunkLines = 1_000;

function* slices(lines: readonly string[], from = 0): Generator<readonly string[]> {
  for (let i = from; i < lines.length; i += chunkLines) yield lines.slice(i, i + chunkLines);
}

/**
 * A batch already encoded whole, put in timestamp order with each timestamp once (the first given
 * wins); null when it holds no reading. Stations send in order, so one comparison per reading usually
 * finds nothing to do.
 */
export function sourceOfEncoded(batch: EncodedBatch): BatchSource | null {
  const { timestamps, lines } = batch;
  let ascending = true;
  for (let i = 1; i < timestamps.length && ascending; i++) ascending = timestamps[i - 1]! < timestamps[i]!;
  let ordered = batch;
  if (!ascending) {
    // Array.prototype.sort is stable: among equal timestamps the first given comes first and is kept.
    const order = timestamps.map((_, i) => i).sort((a, b) => (timestamps[a]! < timestamps[b]! ? -1 : timestamps[a]! > timestamps[b]! ? 1 : 0));
    const unique = order.filter((index, i) => i === 0 || timestamps[index] !== timestamps[order[i - 1]!]);
    ordered = { stationId: batch.stationId, timestamps: unique.map((i) => timestamps[i]!), lines: unique.map((i) => lines[i]!) };
  }
  if (ordered.lines.length === 0) return null;
  return {
    stationId: ordered.stationId, first: ordered.timestamps[0]!, last: ordered.timestamps.at(-1)!,
    chunks: () => slices(ordered.lines), lines: ordered.lines, timestamps: ordered.timestamps,
    repeats: lines.length - ordered.lines.length,
  };
}

// What stations send nearly always: UTC with a Z, whole seconds or milliseconds.
const canonicalUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;

/**
 * The posted readings encoded while COPY takes them, when one look at their raw timestamps shows the
 * usual case: every one a canonical UTC text of one length, strictly ascending, so that the lines come
 * out in order with no repeat whichever rows turn out to be errors. Null otherwise: the batch is then
 * encoded whole and sorted first. `onRowError` hears of each reading that cannot be stored, by index.
 */
export function streamingSource(
  encoder: BatchEncoder, readings: readonly unknown[], onRowError: (index: number, error: unknown) => void,
): BatchSource | null {
  let previous = '';
  for (const raw of readings) {
    const ts = (raw as { timestamp?: unknown } | null)?.timestamp;
    if (typeof ts !== 'string' || !(ts > previous) || (previous !== '' && ts.length !== previous.length) || !canonicalUtc.test(ts)) return null;
    previous = ts;
  }
  const first = (readings[0] as { timestamp: string }).timestamp;
  let next = 0;
  const { lines, timestamps } = encoder;
  function* chunks(): Generator<readonly string[]> {
    let from = 0;
    while (next < readings.length) {
      while (next < readings.length && lines.length - from < chunkLines) {
        const index = next++;
        try {
          encoder.add(readings[index]);
        } catch (error) {
          onRowError(index, error);
        }
      }
      if (lines.length > from) {
        yield lines.slice(from);
        from = lines.length;
      }
    }
    yield* slices(lines, from);
  }
  return { stationId: encoder.stationId, first, last: previous, chunks, lines, timestamps, repeats: 0 };
}
