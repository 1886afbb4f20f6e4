import type { PgPool } from '../../db/pool.js';
import type { ParamError } from '../../http/problem.js';
import type { z } from '../../http/zod.js';
import type { AsOf } from './asOf.js';
import type { AnswerFacts } from './attribution.js';
import type { QcConfig } from './qc/config.js';

/**
 * What a snapshot's bytes depend on beyond the readings, fixed when it is made: the station's interval
 * (coverage), the end of a window of hours (the instant it was made, whatever instant it is read as of).
 */
export type Pinned = {
  intervalSeconds?: number; windowEnd?: string;
  /** Each station's quality-control configuration, for the QARTOD flags (none in snapshots made before them). */
  qc?: Record<string, QcConfig>;
  /**
   * How its means and spreads are computed: `exact` sums (snapshots of aggregates and compare made since
   * 0.14.0); absent, doubles summed in timestamp order, as those made before were.
   */
  statistics?: 'exact';
};

/** The instants whole UTC days from `from` to `to` (inclusive) cover, for a snapshot's span. */
export const daysSpan = (from?: string, to?: string) => ({
  start: from ? `${from}T00:00:00.000Z` : null,
  end: to ? new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000).toISOString() : null,
});

/** A file made from the archive: its bytes and how many rows of data it holds. */
export type DataFile = { bytes: Buffer; rows: number };

/** Thrown when an answer is larger than a snapshot may hold. */
export class SnapshotTooLargeError extends Error {}

/**
 * Everything a stream gives, as one buffer, at most `maxBytes`: beyond, the stream is destroyed (its query
 * cancelled) and SnapshotTooLargeError thrown, so that a snapshot of an archive's whole history cannot
 * hold the service's memory.
 */
export async function collect(stream: AsyncIterable<Buffer | string> & { destroy: () => void }, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    length += bytes.length;
    if (length > maxBytes) {
      stream.destroy();
      throw new SnapshotTooLargeError(`more than ${maxBytes} bytes`);
    }
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}

/** The records of CSV text after its header row: line ends outside double quotes, less the header's. */
export function csvRecords(bytes: Buffer): number {
  let records = 0;
  let quoted = false;
  for (const byte of bytes) {
    if (byte === 0x22) quoted = !quoted;
    else if (byte === 0x0a && !quoted) records++;
  }
  return Math.max(0, records - 1);
}

/**
 * A readings endpoint whose answers can be kept as snapshots: its path and query schema, and how its
 * answer is made as CSV (the header row and the rows; the snapshot adds its own comment lines) and as
 * Parquet, read as of an instant. Each concern describes its own endpoints; the snapshots take them as
 * given, so that no concern imports another.
 */
export type SnapshotSource<Q = Record<string, unknown>> = {
  path: string;
  schema: z.ZodType<Q, z.ZodTypeDef, unknown>;
  checks?: (query: Q) => ParamError[];
  /** The stations the answer reads. */
  stations: (query: Q) => string[];
  /** The readings' timestamps the answer covers, as ISO instants (null for an open end). */
  span: (query: Q, asOf: AsOf) => { start: string | null; end: string | null };
  /**
   * What the answer is, for a citation: "hourly aggregates (Europe/Zurich time) of readings of station X
   * from A to B"; an open range ends at the snapshot's instant.
   */
  describe: (query: Q, asOf: AsOf, pinned: Pinned) => string;
  /**
   * What the snapshot's files say about their rows beside its own instant and address: the zone, the
   * parameters, the time covered (at least what the live answer's files say).
   */
  facts: (query: Q, asOf: AsOf, pinned: Pinned) => AnswerFacts;
  /** What the bytes depend on beyond the readings, read when the snapshot is made as of `asOf`. */
  pin: (pool: PgPool, query: Q, asOf: AsOf) => Promise<Pinned>;
  /** The CSV's header row and rows, at most `maxBytes` (else SnapshotTooLargeError). */
  csv: (pool: PgPool, query: Q, asOf: AsOf, pinned: Pinned, maxBytes: number) => Promise<DataFile>;
  /** The Parquet file of the same rows. */
  parquet: (pool: PgPool, query: Q, asOf: AsOf, pinned: Pinned, metadata: Record<string, string>, maxBytes: number) => Promise<Buffer>;
};

/**
 * A source as the snapshots hold it, whatever its query type: every query a source is handed is the one
 * its own schema parsed, so its functions see the type they were written for.
 */
export const anySource = <Q>(source: SnapshotSource<Q>): SnapshotSource => source as unknown as SnapshotSource;
