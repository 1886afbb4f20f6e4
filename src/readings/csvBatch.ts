import Papa from 'papaparse';
import { badRequest } from '../http/problem.js';
import type { BatchEncoder } from './batchEncoder.js';
import { csvColumns, type CsvColumns } from './csvReadingRow.js';
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
  const lines = new PlainCsvLines(0);
  const found: number[] = [];
  for (let step = lines.next(bytes, true); step !== 'end'; step = lines.next(bytes, true)) {
    if (step === 'unusual') return parsedCsvBatch(bytes.toString('utf8'));
    found.push(lines.start, lines.end);
  }
  if (found.length === 0) return { stationId: null, count: 0, encode: () => {} };
  const rows = new CsvRows(bytes.toString('utf8', found[0]!, found[1]!));
  return {
    stationId: null,
    count: found.length / 2 - 1,
    encode: (encoder, index) => rows.encode(encoder, bytes, found[2 * index + 2]!, found[2 * index + 3]!),
  };
}

/** The rows of a CSV body under its header: each written in place when it can be, else judged as a reading. */
export class CsvRows {
  private readonly header: string[];
  private readonly columns: CsvColumns;

  /** Throws the 400 of a header that names a column twice or no timestamp. */
  constructor(headerLine: string) {
    this.header = checkedHeader(headerLine.split(','));
    this.columns = csvColumns(this.header);
  }

  /** The row `bytes`[start, end), a line with no quote and no line break. */
  encode(encoder: BatchEncoder, bytes: Buffer, start: number, end: number): void {
    if (encoder.writeCsvInPlace(this.columns, bytes, start, end)) return;
    addReading(encoder, csvReading(this.header, bytes.toString('utf8', start, end).split(',')));
  }
}

/** A CSV body parsed whole by papaparse into readings (or their RowErrors), then encoded one by one. */
export function parsedCsvBatch(text: string): PostedBatch {
  const { data } = Papa.parse<string[]>(text, { skipEmptyLines: true, delimiter: ',' });
  if (data.length === 0) return { stationId: null, count: 0, encode: () => {} };
  const header = checkedHeader(data[0]!);
  const readings = data.slice(1).map((fields) => csvReading(header, fields));
  return { stationId: null, count: readings.length, encode: (encoder, index) => addReading(encoder, readings[index]) };
}

function addReading(encoder: BatchEncoder, reading: unknown): void {
  if (reading instanceof RowError) throw reading;
  encoder.add(reading);
}

/** The header's names, trimmed, once checked: each named once, a timestamp among them. */
function checkedHeader(names: readonly string[]): string[] {
  const header = names.map((name) => name.trim());
  if (new Set(header).size !== header.length) throw badRequest('the CSV header names a column twice', [{ param: 'body', message: 'header columns must be unique' }]);
  if (!header.includes('timestamp')) throw badRequest('the CSV header has no timestamp column', [{ param: 'body', message: 'the header row must name a timestamp column' }]);
  return header;
}

/** A row's fields as the reading BatchEncoder.add judges, or the RowError of a row with another field count. */
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

const lf = 0x0a;
const cr = 0x0d;
const quote = 0x22;
const unknownBreak = 0;
const lfBreak = 1;
const crlfBreak = 2;

/**
 * The non-blank lines of a CSV body that papaparse would split at its line breaks alone: one with no
 * quote, whose line breaks are all LF or all CRLF (the first one decides). Read from `at` as the bytes
 * arrive, a line at a time: `next` gives 'line' (its bytes [start, end), without the line break), 'more'
 * (the next line is not all here), 'end' (the whole body is read) or 'unusual' (a quote, a stray CR, a
 * line break of the other kind), and papaparse must read the body.
 */
export class PlainCsvLines {
  start = 0;
  end = 0;
  private lineBreak = unknownBreak;

  constructor(private at: number) {}

  /** Whether bytes are left to read in `bytes`. */
  pending(bytes: Buffer): boolean {
    return this.at < bytes.length;
  }

  next(bytes: Buffer, complete: boolean): 'line' | 'more' | 'end' | 'unusual' {
    for (;;) {
      if (this.at >= bytes.length) return complete ? 'end' : 'more';
      const newline = bytes.indexOf(lf, this.at);
      if (newline < 0 && !complete) return 'more';
      if (this.lineBreak === unknownBreak && newline >= 0) this.lineBreak = bytes[newline - 1] === cr ? crlfBreak : lfBreak;
      let end = newline < 0 ? bytes.length : newline;
      if (this.lineBreak === crlfBreak && newline >= 0) {
        if (bytes[newline - 1] !== cr) return 'unusual';
        end--;
      }
      // The line itself, past its CRLF: no quote, no other CR (searched within it, never past it).
      for (let k = this.at; k < end; k++) if (bytes[k] === quote || bytes[k] === cr) return 'unusual';
      const start = this.at;
      this.at = newline < 0 ? bytes.length : newline + 1;
      if (end > start) {
        this.start = start;
        this.end = end;
        return 'line';
      }
    }
  }
}
