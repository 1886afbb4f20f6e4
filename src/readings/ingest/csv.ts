import { CsvError, parse } from 'csv-parse/sync';
import { badRequest } from '../../http/problem.js';
import { parseJson } from './parseJson.js';
import { RowError } from './rules.js';
import { bodyText } from './text.js';

const lineBreaks = ['\r\n', '\n', '\r'].map((lineBreak) => Buffer.from(lineBreak));

/**
 * An RFC 4180 CSV body's readings: a header row naming each column as a JSON reading names its key
 * (module_data as JSON text), then a reading per row; an empty field is null, blank lines are skipped,
 * and line breaks may be CRLF, LF or CR, mixed. A row whose field count is not the header's is that
 * reading's error. Quoting is RFC 4180's: a quote that is never closed, or one inside an unquoted
 * field, leaves no sure way to tell where rows end, so the body is refused whole, naming the line, and
 * nothing of it is stored (a lenient reader would store the rows after it as text inside one field).
 */
export function csvReadings(bytes: Buffer): unknown[] {
  const rows = bytes.includes(quote) ? parsedRows(bytes) : plainRows(bytes);
  if (rows.length === 0) return [];
  const header = checkedHeader(rows[0]!);
  return rows.slice(1).map((fields) => csvReading(header, fields));
}

const quote = 0x22;

/**
 * The rows of a body with no quote, split at its line breaks and commas: what csv-parse gives for such a
 * body (a property test holds the two to the same rows), without its per-byte state machine, which
 * takes most of a batch's time. Stations and spreadsheet exports nearly always write CSV this way.
 */
export function plainRows(bytes: Buffer): string[][] {
  const rows: string[][] = [];
  for (const line of bodyText(bytes).split(/\r\n|\n|\r/)) if (line !== '') rows.push(line.split(','));
  return rows;
}

/** The rows of any body, as csv-parse reads them: the reference, and the reader of quoted fields. */
export function parsedRows(bytes: Buffer): string[][] {
  let lastLine = 0;
  let rows: string[][];
  try {
    // Parsed as bytes, each field then made text alone: bytes that are not UTF-8 stay marked (bodyText)
    // instead of being replaced while the parser decodes.
    const fields = parse(bytes, {
      encoding: null,
      record_delimiter: lineBreaks,
      skip_empty_lines: true,
      relax_column_count: true,
      on_record: (record: string[], context: { lines: number }) => {
        lastLine = context.lines;
        return record;
      },
      // With no encoding, csv-parse gives each field as its bytes; its types know only strings.
    }) as unknown as Buffer[][];
    rows = fields.map((record) => record.map(bodyText));
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const where = error.code === 'CSV_QUOTE_NOT_CLOSED' ? `a quoted field opened after line ${lastLine} is never closed` : error.message;
    throw badRequest(`the CSV body cannot be read: ${where}`, [{ param: 'body', message: 'must be CSV as RFC 4180 quotes it: a field holding a quote, comma or line break quoted whole, quotes inside doubled' }]);
  }
  return rows;
}

// Keys that alter objects in consumers that merge parsed data naively: refused in every format.
const forbiddenColumns = new Set(['__proto__', 'constructor', 'prototype']);

/** The header's names, trimmed, once checked: each named once, a timestamp among them, none forbidden. */
function checkedHeader(names: readonly string[]): string[] {
  const header = names.map((name) => name.trim());
  if (new Set(header).size !== header.length) throw badRequest('the CSV header names a column twice', [{ param: 'body', message: 'header columns must be unique' }]);
  if (!header.includes('timestamp')) throw badRequest('the CSV header has no timestamp column', [{ param: 'body', message: 'the header row must name a timestamp column' }]);
  const forbidden = header.find((name) => forbiddenColumns.has(name));
  if (forbidden !== undefined) {
    throw badRequest(`the request body is not accepted: a column named ${forbidden} is refused`, [{ param: 'body', message: 'columns named __proto__, constructor or prototype are refused' }]);
  }
  return header;
}

/** A row's fields as the reading the rules judge, or the RowError of a row with another field count. */
function csvReading(header: readonly string[], fields: readonly string[]): Record<string, unknown> | RowError {
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
