import type { Context } from 'koa';
import { bodyProblem } from '../../http/bodyProblem.js';
import { badRequest, unsupportedMediaType } from '../../http/problem.js';
import { parseInput } from '../../http/validate.js';
import { csvReadings } from './csv.js';
import { parseJson } from './parseJson.js';
import { RowError } from './rules.js';
import { ingestBodySchema } from './schema.js';
import { bodyText } from './text.js';

/** The body formats a station may post, by media type. */
export const ingestMediaTypes = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' } as const;
export type IngestFormat = keyof typeof ingestMediaTypes;

/**
 * A posted batch, parsed: `stationId` as the body names it (JSON only; in the other formats the key
 * names the station), and its readings in order, each as parsed (for the rules to judge) or the
 * RowError of a line or row that does not parse, so that one bad line costs only itself.
 */
export type PostedBatch = { stationId: string | null; readings: readonly unknown[] };

/** Which format the request's Content-Type names; a 415 naming the accepted ones otherwise. */
export function ingestFormat(ctx: Context): IngestFormat {
  // The header's media type itself (parameters aside): ctx.is() says nothing of a request without a body.
  const type = ctx.request.type.toLowerCase();
  if (type === 'application/json' || /^application\/[^/]+\+json$/.test(type)) return 'json';
  if (type === 'application/x-ndjson' || type === 'application/jsonl') return 'ndjson';
  if (type === 'text/csv') return 'csv';
  throw unsupportedMediaType(
    `the request body must be application/json, application/x-ndjson or text/csv, not ${ctx.request.type || 'missing'}`,
  );
}

/**
 * The whole body parsed in its format by a general parser (JSON.parse through bourne, csv-parse), after
 * any byte-order marks. A key named `__proto__` anywhere refuses the body whole, in every format; a
 * body with no reading is a 400. Throws the problem the body is.
 */
export function parseBatch(bytes: Buffer, format: IngestFormat): PostedBatch {
  if (bytes.length === 0) throw badRequest('the request has no body: send a batch of readings', [{ param: 'body', message: 'is missing' }]);
  try {
    const body = bytes.subarray(pastByteOrderMarks(bytes));
    const posted = format === 'json' ? jsonBatch(bodyText(body)) : format === 'ndjson' ? ndjsonBatch(bodyText(body)) : { stationId: null, readings: csvReadings(body) };
    if (posted.readings.length === 0) throw badRequest('the body holds no readings', [{ param: 'body', message: 'must hold at least one reading' }]);
    return posted;
  } catch (error) {
    throw bodyProblem(error as Error);
  }
}

// A byte-order mark, as spreadsheet programs write at the start of a UTF-8 file, is not part of the body.
const byteOrderMark = Buffer.from([0xef, 0xbb, 0xbf]);

function pastByteOrderMarks(bytes: Buffer): number {
  let start = 0;
  while (bytes.indexOf(byteOrderMark, start) === start) start += byteOrderMark.length;
  return start;
}

// Strict JSON: only an object or an array at the top.
// eslint-disable-next-line no-control-regex -- JSON's whitespace is these control characters
const strictJson = /^[\x20\x09\x0a\x0d]*(\[|\{)/;

/** The envelope `{"station_id": …, "readings": [ … ]}`, held to its schema before any reading is looked at. */
function jsonBatch(text: string): PostedBatch {
  if (text !== '' && !strictJson.test(text)) throw new SyntaxError('invalid JSON, only supports object and array');
  // A body of byte-order marks alone is an empty object, which the schema then names what it lacks.
  const body = parseInput(ingestBodySchema, (text === '' ? {} : parseJson(text)) as Record<string, unknown>, 'body');
  return { stationId: body.station_id, readings: body.readings };
}

/** One reading per line (LF or CRLF); blank lines are skipped; a line that is not JSON is that reading's error. */
function ndjsonBatch(text: string): PostedBatch {
  const readings: unknown[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    readings.push(ndjsonReading(line));
  }
  return { stationId: null, readings };
}

function ndjsonReading(line: string): unknown {
  try {
    return parseJson(line);
  } catch (error) {
    // A forbidden key refuses the body whole, as in the other formats.
    if (error instanceof SyntaxError && /prototype/.test(error.message)) throw error;
    return new RowError('the line is not a JSON object');
  }
}
