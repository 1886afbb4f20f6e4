import { BatchEncoder } from './batchEncoder.js';
import type { JsonBytes } from './jsonBytes.js';
import { parseJson } from './parseJson.js';
import { RowError } from './readingRules.js';

const maxErrorDetails = 100;

/**
 * A batch's readings as they are taken, in order: each is encoded to its COPY row or, when it cannot be
 * stored, counted as an error at its index with the reason. Any other error (a key that refuses the body
 * whole) is thrown: it is the body's problem, not a row's.
 */
export class BatchIntake {
  readonly encoder: BatchEncoder;
  /** Readings taken so far, errors included: the index of the next one. */
  count = 0;
  errors = 0;
  readonly errorDetails: { index: number; reason: string }[] = [];

  /** `latestMs`: readings after it are row errors (ahead of the server's clock beyond the tolerance). */
  constructor(stationId: string, latestMs: number) {
    this.encoder = new BatchEncoder(stationId, latestMs);
  }

  get rows() {
    return this.encoder.rows;
  }

  /** Takes one reading by `add`, which encodes it (the `index`th of the batch) or throws the RowError it is. */
  take(add: (encoder: BatchEncoder, index: number) => void): void {
    const index = this.count++;
    try {
      add(this.encoder, index);
    } catch (error) {
      if (!(error instanceof RowError)) throw error;
      this.errors++;
      if (this.errorDetails.length < maxErrorDetails) this.errorDetails.push({ index, reason: error.message });
    }
  }

  /**
   * Takes the reading whose JSON starts at `start` in place when it is one reading alone on the line that
   * ends at `lineEnd` (nothing but spaces after it); false, taking nothing, otherwise: the line is then
   * for the general path (ndjsonLine). One pass over the line's bytes where a scan for the value's end
   * and then its writing took two (a third of an NDJSON batch's time).
   */
  takeJsonLine(json: JsonBytes, start: number, lineEnd: number): boolean {
    const end = this.encoder.writeInPlace(json, start);
    if (end < 0) return false;
    if (end > lineEnd || json.space(end) < lineEnd) {
      this.rows.dropLastRow();
      return false;
    }
    this.count++;
    return true;
  }

  /**
   * Takes the reading whose JSON starts at `start`, in place where it can; gives where it ends, or -1
   * (taking nothing) when `json`'s bytes do not hold one whole JSON value there, or not yet.
   */
  takeJsonAt(json: JsonBytes, start: number): number {
    const end = this.encoder.writeInPlace(json, start);
    if (end >= 0) {
      this.count++;
      return end;
    }
    const whole = json.value(start, 1);
    if (whole >= 0) this.take((encoder) => encoder.add(parseJson(json.bytes.toString('utf8', start, whole))));
    return whole;
  }
}
