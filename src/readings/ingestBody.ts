import type { Context } from 'koa';
import { bodyProblem } from '../http/bodyProblem.js';
import { badRequest, unsupportedMediaType } from '../http/problem.js';
import { parseInput } from '../http/validate.js';
import type { BatchEncoder } from './batchEncoder.js';
import { csvBatch } from './csvBatch.js';
import { ingestBodySchema } from './ingestSchema.js';
import { scanJsonBatch } from './jsonBatch.js';
import { JsonBytes } from './jsonBytes.js';
import { parseJson } from './parseJson.js';
import { RowError } from './readingRules.js';

/** The body formats a station may post, by media type. */
export const ingestMediaTypes = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' } as const;
export type IngestFormat = keyof typeof ingestMediaTypes;

/**
 * A posted batch before its readings are looked at: `stationId` as the body names it (JSON only; in the
 * other formats the key names the station), its number of readings, and `encode`, which hands reading
 * `index` to the encoder, as the body's bytes where it can, and throws the RowError that a reading or a
 * line which does not parse is, so that one bad line costs only itself.
 */
export type PostedBatch = { stationId: string | null; count: number; encode: (encoder: BatchEncoder, index: number) => void };

/** Which format the request's Content-Type names; a 415 naming the accepted ones otherwise. */
export function ingestFormat(ctx: Context): IngestFormat {
  if (ctx.is('application/json', '+json')) return 'json';
  if (ctx.is('application/x-ndjson', 'application/jsonl')) return 'ndjson';
  if (ctx.is('text/csv')) return 'csv';
  throw unsupportedMediaType(
    `the request body must be application/json, application/x-ndjson or text/csv, not ${ctx.request.type || 'missing'}`,
  );
}

/**
 * The whole body parsed in its format, after any byte-order marks. A key named `__proto__` anywhere
 * refuses the body whole, in every format; a body with no reading is a 400. Throws the problem the body is.
 */
export function parseIngestBody(bytes: Buffer, format: IngestFormat): PostedBatch {
  try {
    const body = withoutByteOrderMarks(bytes);
    const posted = format === 'json' ? jsonBatch(body) : format === 'ndjson' ? ndjsonBatch(body) : csvBatch(body);
    if (posted.count === 0) throw badRequest('the body holds no readings', [{ param: 'body', message: 'must hold at least one reading' }]);
    return posted;
  } catch (error) {
    throw bodyProblem(error as Error);
  }
}

// A byte-order mark, as spreadsheet programs write at the start of a UTF-8 file, is not part of the body.
export const byteOrderMark = Buffer.from([0xef, 0xbb, 0xbf]);
function withoutByteOrderMarks(bytes: Buffer): Buffer {
  return bytes.subarray(pastByteOrderMarks(bytes));
}

/** Where the body starts, past any byte-order marks. */
export function pastByteOrderMarks(bytes: Buffer): number {
  let start = 0;
  while (bytes.indexOf(byteOrderMark, start) === start) start += byteOrderMark.length;
  return start;
}

const parsedReadings = (readings: readonly unknown[]): PostedBatch['encode'] => (encoder, index) => {
  const reading = readings[index];
  if (reading instanceof RowError) throw reading;
  encoder.add(reading);
};

// Strict JSON: only an object or an array at the top.
// eslint-disable-next-line no-control-regex -- JSON's whitespace is these control characters
const strictJson = /^[\x20\x09\x0a\x0d]*(\[|\{)/;

/** The envelope read in place; any body it does not take goes through the general parser and the schema. */
function jsonBatch(bytes: Buffer): PostedBatch {
  const scanned = scanJsonBatch(bytes);
  if (scanned) {
    const { json, starts, ends } = scanned;
    return { stationId: scanned.stationId, count: starts.length, encode: (encoder, index) => encoder.addJson(json, starts[index]!, ends[index]!) };
  }
  const text = bytes.toString('utf8');
  if (text !== '' && !strictJson.test(text)) throw new SyntaxError('invalid JSON, only supports object and array');
  // An empty body is an empty object, which the schema then names what it lacks.
  const body = parseInput(ingestBodySchema, (text === '' ? {} : parseJson(text)) as Record<string, unknown>, 'body');
  return { stationId: body.station_id, count: body.readings.length, encode: parsedReadings(body.readings) };
}

/**
 * One reading per line; blank lines are skipped. A line that is one JSON value is read in place; any
 * other is parsed here, and is that reading's error when it is not JSON.
 */
function ndjsonBatch(bytes: Buffer): PostedBatch {
  const json = new JsonBytes(bytes);
  const starts: number[] = [];
  const ends: number[] = [];
  const parsed = new Map<number, unknown>();
  for (let lineStart = 0; lineStart < bytes.length;) {
    const newline = bytes.indexOf(0x0a, lineStart);
    const lineEnd = newline < 0 ? bytes.length : newline;
    const line = ndjsonLine(json, lineStart, lineEnd);
    if (line) {
      if ('end' in line) {
        starts.push(line.start);
        ends.push(line.end);
      } else {
        parsed.set(starts.length, line.parsed);
        starts.push(-1);
        ends.push(-1);
      }
    }
    lineStart = lineEnd + 1;
  }
  const encode: PostedBatch['encode'] = (encoder, index) => {
    if (starts[index]! >= 0) return encoder.addJson(json, starts[index]!, ends[index]!);
    const reading = parsed.get(index);
    if (reading instanceof RowError) throw reading;
    encoder.add(reading);
  };
  return { stationId: null, count: starts.length, encode };
}

/**
 * The NDJSON line [lineStart, lineEnd) of `json`: where its one JSON value lies, to be read in place;
 * else the line parsed, or the RowError it is when it is not JSON; null for a blank line.
 */
export function ndjsonLine(json: JsonBytes, lineStart: number, lineEnd: number): { start: number; end: number } | { parsed: unknown } | null {
  const start = json.space(lineStart);
  const end = start < lineEnd ? json.value(start) : -1;
  if (end >= 0 && end <= lineEnd && json.space(end) >= lineEnd) return { start, end };
  const line = json.bytes.toString('utf8', lineStart, lineEnd);
  return line.trim() === '' ? null : { parsed: parsedLine(line) };
}

/** A line the scanner did not take: its reading, or its error when it is not JSON. */
function parsedLine(line: string): unknown {
  try {
    return parseJson(line);
  } catch (error) {
    if (error instanceof SyntaxError && /prototype/.test(error.message)) throw error;
    return new RowError('the line is not a JSON object');
  }
}
