import bourne from '@hapi/bourne';
import coBody from 'co-body';
import type { Context } from 'koa';
import Papa from 'papaparse';
import { bodyProblem } from '../http/bodyProblem.js';
import { badRequest, unsupportedMediaType } from '../http/problem.js';
import { parseInput } from '../http/validate.js';
import { ingestBodySchema } from './ingestSchema.js';
import { RowError } from './readingRules.js';

/** The body formats a station may post, by media type. */
export const ingestMediaTypes = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' } as const;
export type IngestFormat = keyof typeof ingestMediaTypes;

/**
 * A posted batch before its readings are looked at: `stationId` as the body names it (JSON only; in the
 * other formats the key names the station), and each reading as parsed, or the RowError that a line
 * which does not parse is, so that one bad line costs only itself.
 */
export type PostedBatch = { stationId: string | null; readings: unknown[] };

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
 * Reads and parses the body, decompressing it when it says so. The byte limit is enforced while the
 * body streams in (and from Content-Length before that), so an oversized batch is refused without being
 * read whole, let alone parsed. A key named `__proto__` anywhere refuses the body whole, in every format.
 */
export async function readIngestBody(ctx: Context, format: IngestFormat, limitBytes: number): Promise<PostedBatch> {
  // Content codings are case-insensitive (RFC 9110); the decoder only knows them in lower case.
  const encoding = ctx.req.headers['content-encoding'];
  if (encoding) ctx.req.headers['content-encoding'] = encoding.trim().toLowerCase();
  try {
    if (format === 'json') {
      const body = parseInput(ingestBodySchema, (await coBody.json(ctx.req, { limit: limitBytes, strict: true })) as Record<string, unknown>, 'body');
      return { stationId: body.station_id, readings: body.readings };
    }
    // A byte-order mark, as spreadsheet programs write at the start of a UTF-8 CSV, is not part of the first line.
    const text = (await coBody.text(ctx.req, { limit: limitBytes, encoding: 'utf8' })).replace(/^\uFEFF/, '');
    const readings = format === 'ndjson' ? ndjsonReadings(text) : csvReadings(text);
    if (readings.length === 0) throw badRequest('the body holds no readings', [{ param: 'body', message: 'must hold at least one reading' }]);
    return { stationId: null, readings };
  } catch (error) {
    throw bodyProblem(error as Error);
  }
}

const parseJson = (text: string) => bourne.parse(text, { protoAction: 'error' }) as unknown;

/** One reading per line; blank lines are skipped, and a line that is not JSON is that reading's error. */
function ndjsonReadings(text: string): unknown[] {
  const readings: unknown[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      readings.push(parseJson(line));
    } catch (error) {
      if (error instanceof SyntaxError && /prototype/.test(error.message)) throw error;
      readings.push(new RowError('the line is not a JSON object'));
    }
  }
  return readings;
}

// A CSV field that is a JSON number is a number; every other field keeps its text.
const jsonNumber = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

function csvValue(column: string, text: string): unknown {
  if (text === '') return null;
  if (column === 'timestamp' || column === 'firmware_version') return text;
  if (column === 'module_data') {
    try {
      return parseJson(text);
    } catch (error) {
      if (error instanceof SyntaxError && /prototype/.test(error.message)) throw error;
      return text;
    }
  }
  return jsonNumber.test(text) ? Number(text) : text;
}

/**
 * RFC 4180 CSV with a header row naming each column as a JSON reading names its key (module_data as
 * JSON text); an empty field is null. A row whose field count is not the header's is that reading's error.
 */
function csvReadings(text: string): unknown[] {
  const { data } = Papa.parse<string[]>(text, { skipEmptyLines: true, delimiter: ',' });
  const header = data[0]?.map((name) => name.trim());
  if (!header) return [];
  if (new Set(header).size !== header.length) throw badRequest('the CSV header names a column twice', [{ param: 'body', message: 'header columns must be unique' }]);
  if (!header.includes('timestamp')) throw badRequest('the CSV header has no timestamp column', [{ param: 'body', message: 'the header row must name a timestamp column' }]);
  const readings: unknown[] = [];
  for (let r = 1; r < data.length; r++) {
    const fields = data[r]!;
    if (fields.length !== header.length) {
      readings.push(new RowError(`the row has ${fields.length} fields; the header has ${header.length}`));
      continue;
    }
    const reading: Record<string, unknown> = Object.create(null);
    for (let c = 0; c < header.length; c++) {
      const value = csvValue(header[c]!, fields[c]!);
      if (value !== null) reading[header[c]!] = value;
    }
    readings.push(reading);
  }
  return readings;
}
