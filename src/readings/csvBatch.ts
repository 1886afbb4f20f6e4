import Papa from 'papaparse';
import { badRequest } from '../http/problem.js';
import type { BatchEncoder } from './batchEncoder.js';
import { csvColumns } from './csvReadingRow.js';
import type { PostedBatch } from './ingestBody.js';
import { parseJson } from './parseJson.js';
import { RowError } from './readingRules.js';

/**
 * An RFC 4180 CSV body: a header row naming each column as a JSON reading names its key (module_data as
 * JSON text), then a reading per row; an empty field is null, blank lines are skipped. A row whose field
 * count is not the header's is that reading's error. A body without quotes and with one kind of line
 * break, as stations and spreadsheet exports write it, is read in place: each row is found by its line
 * break and written from its bytes (writeCsvReading), or made into a reading as below when it is not of
 * the usual form. Any other body is parsed whole by papaparse first.
 */
export function csvBatch(bytes: Buffer): PostedBatch {
  const lines = plainLines(bytes);
  if (!lines) return parsedCsvBatch(bytes.toString('utf8'));
  if (lines.length === 0) return { stationId: null, count: 0, encode: () => {} };
  const header = checkedHeader(bytes.toString('utf8', lines[0]!, lines[1]!).split(','));
  const columns = csvColumns(header);
  return {
    stationId: null,
    count: lines.length / 2 - 1,
    encode: (encoder, index) => {
      const start = lines[2 * index + 2]!;
      const end = lines[2 * index + 3]!;
      if (encoder.writeCsvInPlace(columns, bytes, start, end)) return;
      addReading(encoder, csvReading(header, bytes.toString('utf8', start, end).split(',')));
    },
  };
}

/** A CSV body parsed whole by papaparse into readings (or their RowErrors), then encoded one by one. */
export function parsedCsvBatch(text: string): PostedBatch {
  const { data } = Papa.parse<string[]>(text, { skipEmptyLines: true, delimiter: ',' });
  if (data.length === 0) return { stationId: null, count: 0, encode: () => {} };
  const header = checkedHeader(data[0]!);
  const readings = data.slice(1).map((fields) => csvReading(header, fields));
  return { stationId: null, count: readings.length, encode: (encoder, index) => addReading(encoder, readings[index]) };
}

export function addReading(encoder: BatchEncoder, reading: unknown): void {
  if (reading instanceof RowError) throw reading;
  encoder.add(reading);
}

/** The header's names, trimmed, once checked: each named once, a timestamp among them. */
export function checkedHeader(names: readonly string[]): string[] {
  const header = names.map((name) => name.trim());
  if (new Set(header).size !== header.length) throw badRequest('the CSV header names a column twice', [{ param: 'body', message: 'header columns must be unique' }]);
  if (!header.includes('timestamp')) throw badRequest('the CSV header has no timestamp column', [{ param: 'body', message: 'the header row must name a timestamp column' }]);
  return header;
}

/** A row's fields as the reading BatchEncoder.add judges, or the RowError of a row with another field count. */
export function csvReading(header: readonly string[], fields: readonly string[]): Record<string, unknown> | RowError {
  if (fields.length !== header.length) return new RowError(`the row has ${fields.length} fields; the header has ${header.length}`);
  const reading: Record<string, unknown> = Object.create(null);
  for (let c = 0; c < header.length; c++) {
    const value = csvValue(header[c]!, fields[c]!);
    if (value !== null) reading[header[c]!] = value;
  }
  return reading;
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

const lf = 0x0a;
const cr = 0x0d;

/**
 * The non-blank lines of a body papaparse would split at its line breaks alone, as [start, end) pairs
 * (the header's first), without their CR: one with no quote, whose line breaks are all LF or all CRLF.
 * Null for any other body (quoted fields, a lone CR, mixed line breaks), which papaparse then reads.
 */
function plainLines(bytes: Buffer): number[] | null {
  if (bytes.indexOf(0x22) >= 0) return null;
  const crlf = bytes.indexOf(cr) >= 0;
  const lines: number[] = [];
  for (let start = 0; start < bytes.length;) {
    const newline = bytes.indexOf(lf, start);
    const next = newline < 0 ? bytes.length : newline + 1;
    let end = newline < 0 ? bytes.length : newline;
    if (crlf) {
      // Every line break a CRLF, and no CR elsewhere (the last line may end without one).
      if (newline >= 0 && bytes[newline - 1] !== cr) return null;
      if (newline >= 0) end--;
      const stray = bytes.indexOf(cr, start);
      if (stray >= 0 && stray < end) return null;
      if (newline < 0 && bytes[end - 1] === cr) return null;
    }
    if (end > start) lines.push(start, end);
    start = next;
  }
  return lines;
}
