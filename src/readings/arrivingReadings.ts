import { stationIdSchema } from '../http/params.js';
import type { BatchIntake } from './batchIntake.js';
import { CsvRows, PlainCsvLines } from './csvBatch.js';
import { byteOrderMark, ndjsonLine, type IngestFormat } from './ingestBody.js';
import { ascii, closeBrace, closeBracket, colon, comma, JsonBytes, openBrace, openBracket, quote } from './jsonBytes.js';
import { RowError } from './readingRules.js';

/**
 * After a look at the bytes so far: more bytes are needed, `upTo` readings are taken (call again), the
 * body is whole and every reading taken, or the body is not one for this path (the whole-body parser
 * answers it from the start).
 */
export type Progress = 'more' | 'paused' | 'done' | 'refused';

/** Readings found in a body while it arrives, each taken as soon as its bytes are all there. */
export interface ArrivingReadings {
  /** The station the body names; null in a format that names none (the key names it). */
  readonly stationId: string | null;
  /**
   * Reads on through `bytes` (every byte received so far; `complete` once that is the whole body),
   * taking whole readings into `intake` until it holds `upTo`.
   */
  advance(bytes: Buffer, complete: boolean, intake: BatchIntake, upTo: number): Progress;
}

/** Where a body starts past its byte-order marks; -1 while the bytes so far may still be the start of one. */
function pastMarks(bytes: Buffer, complete: boolean): number {
  let i = 0;
  for (;;) {
    const left = bytes.length - i;
    const prefix = Math.min(left, byteOrderMark.length);
    if (bytes.compare(byteOrderMark, 0, prefix, i, i + prefix) !== 0) return i;
    if (prefix < byteOrderMark.length) return complete ? i : -1;
    i += byteOrderMark.length;
  }
}

// Where the envelope scanner stands: the token it expects next.
const open = 0;
const firstKey = 1;
const key = 2;
const keyColon = 3;
const stationValue = 4;
const readingsValue = 5;
const firstReading = 6;
const reading = 7;
const afterReading = 8;
const afterMember = 9;
const end = 10;

const stationKey = ascii('station_id');
const readingsKey = ascii('readings');

/**
 * The JSON envelope `{"station_id": …, "readings": [ … ]}` (either order) read token by token as its
 * bytes arrive, each reading taken in place when it has the usual form. Only the plain envelope is
 * taken here: any other key, a key or station given twice or with an escape, no reading, anything
 * that is not JSON is refused, and the whole-body parser gives the answer it always has.
 */
class ArrivingJsonBatch implements ArrivingReadings {
  stationId: string | null = null;
  private step = open;
  private at = -1;
  private member = readingsKey;
  private sawReadings = false;

  advance(bytes: Buffer, complete: boolean, intake: BatchIntake, upTo: number): Progress {
    if (this.at < 0) {
      this.at = pastMarks(bytes, complete);
      if (this.at < 0) return 'more';
    }
    const json = new JsonBytes(bytes);
    const b = bytes;
    for (;;) {
      let i = json.space(this.at);
      if (i >= b.length) {
        this.at = i;
        if (!complete) return 'more';
        return this.step === end && this.sawReadings && this.stationId !== null && stationIdSchema.safeParse(this.stationId).success
          ? 'done'
          : 'refused';
      }
      const c = b[i];
      switch (this.step) {
        case open:
          if (c !== openBrace) return 'refused';
          this.step = firstKey;
          i++;
          break;
        case firstKey:
        case key: {
          if (c === closeBrace && this.step === firstKey) return 'refused';
          const close = plainStringEnd(b, i);
          if (close === -2) return 'refused';
          if (close < 0) return this.wait(i, complete);
          if (json.equals(i + 1, close, stationKey) && this.stationId === null) this.member = stationKey;
          else if (json.equals(i + 1, close, readingsKey) && !this.sawReadings) this.member = readingsKey;
          else return 'refused';
          this.step = keyColon;
          i = close + 1;
          break;
        }
        case keyColon:
          if (c !== colon) return 'refused';
          this.step = this.member === stationKey ? stationValue : readingsValue;
          i++;
          break;
        case stationValue: {
          const close = plainStringEnd(b, i);
          if (close === -2) return 'refused';
          if (close < 0) return this.wait(i, complete);
          this.stationId = b.toString('latin1', i + 1, close);
          this.step = afterMember;
          i = close + 1;
          break;
        }
        case readingsValue:
          if (c !== openBracket) return 'refused';
          this.sawReadings = true;
          this.step = firstReading;
          i++;
          break;
        case firstReading:
        case reading: {
          if (c === closeBracket && this.step === firstReading) return 'refused';
          if (intake.count >= upTo) {
            this.at = i;
            return 'paused';
          }
          const readingEnd = intake.takeJsonAt(json, i);
          if (readingEnd < 0) return this.wait(i, complete);
          this.step = afterReading;
          i = readingEnd;
          break;
        }
        case afterReading:
          if (c === comma) this.step = reading;
          else if (c === closeBracket) this.step = afterMember;
          else return 'refused';
          i++;
          break;
        case afterMember:
          if (c === comma) this.step = key;
          else if (c === closeBrace) this.step = end;
          else return 'refused';
          i++;
          break;
        default:
          // Past the envelope only whitespace may follow.
          return 'refused';
      }
      this.at = i;
    }
  }

  /** The token at `i` is not all here: wait for more bytes, unless none will come. */
  private wait(i: number, complete: boolean): Progress {
    this.at = i;
    return complete ? 'refused' : 'more';
  }
}

/**
 * The closing quote of the string at `i` when it is plain ASCII without escapes; -1 when it is not all
 * here yet, -2 when it is not such a string.
 */
function plainStringEnd(b: Buffer, i: number): number {
  if (b[i] !== quote) return -2;
  for (let k = i + 1; k < b.length; k++) {
    const c = b[k]!;
    if (c === quote) return k;
    if (c < 0x20 || c >= 0x80 || c === backslash) return -2;
  }
  return -1;
}
const backslash = 0x5c;

/** Newline-delimited JSON, one reading a line, each line taken once its newline (or the body's end) is here. */
class ArrivingNdjson implements ArrivingReadings {
  readonly stationId = null;
  private at = -1;

  advance(bytes: Buffer, complete: boolean, intake: BatchIntake, upTo: number): Progress {
    if (this.at < 0) {
      this.at = pastMarks(bytes, complete);
      if (this.at < 0) return 'more';
    }
    const json = new JsonBytes(bytes);
    while (this.at < bytes.length) {
      if (intake.count >= upTo) return 'paused';
      const newline = bytes.indexOf(0x0a, this.at);
      if (newline < 0 && !complete) return 'more';
      const lineEnd = newline < 0 ? bytes.length : newline;
      const start = json.space(this.at);
      if (start < lineEnd && intake.takeJsonLine(json, start, lineEnd)) {
        this.at = lineEnd + 1;
        continue;
      }
      const line = ndjsonLine(json, this.at, lineEnd);
      if (line && 'end' in line) intake.take((encoder) => encoder.addJson(json, line.start, line.end));
      else if (line) {
        intake.take((encoder) => {
          if (line.parsed instanceof RowError) throw line.parsed;
          encoder.add(line.parsed);
        });
      }
      this.at = lineEnd + 1;
    }
    if (!complete) return 'more';
    return intake.count > 0 ? 'done' : 'refused';
  }
}

/**
 * A CSV body as its lines arrive (PlainCsvLines): the header once its line is whole, then each row once
 * its line break (or the body's end) is here, written in place where it can be, exactly as csvBatch
 * reads a whole body. A body whose lines papaparse must read, a header the whole-body path refuses, or
 * no row at all refuses the body, and the whole-body path gives the answer it always has.
 */
class ArrivingCsv implements ArrivingReadings {
  readonly stationId = null;
  private lines: PlainCsvLines | null = null;
  private rows: CsvRows | null = null;

  advance(bytes: Buffer, complete: boolean, intake: BatchIntake, upTo: number): Progress {
    if (!this.lines) {
      const at = pastMarks(bytes, complete);
      if (at < 0) return 'more';
      this.lines = new PlainCsvLines(at);
    }
    while (this.lines.pending(bytes)) {
      if (intake.count >= upTo) return 'paused';
      const step = this.lines.next(bytes, complete);
      if (step === 'unusual') return 'refused';
      if (step !== 'line') break;
      const { start, end } = this.lines;
      if (!this.rows) {
        try {
          this.rows = new CsvRows(bytes.toString('utf8', start, end));
        } catch {
          return 'refused';
        }
        continue;
      }
      const rows = this.rows;
      intake.take((encoder) => rows.encode(encoder, bytes, start, end));
    }
    if (!complete) return 'more';
    return intake.count > 0 ? 'done' : 'refused';
  }
}

/** The reader of a body of `format` as it arrives. */
export function arrivingReadings(format: IngestFormat): ArrivingReadings {
  return format === 'json' ? new ArrivingJsonBatch() : format === 'ndjson' ? new ArrivingNdjson() : new ArrivingCsv();
}
