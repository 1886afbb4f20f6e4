import type { CopyRows } from './copyRows.js';
import { writeMeasuredRow } from './readingColumns.js';
import { canonicalUtcMs, columnNumber, columnNumberAt, numberValue, shortestForm } from './readingBytes.js';
import { fieldAliases, numericFields, readingLimits } from './readingRules.js';

// What a header column is to a reading's row: a numeric column's index, or one of these.
const timestampColumn = 100;
const firmwareColumn = 101;
const ignoredColumn = 102;
const channelColumn = 103;

/**
 * What each column of a CSV body is to a reading's row, decided once from its header. `inPlace` says
 * whether its rows can be written from their bytes at all: not when a column is an alias, module_data,
 * or a channel whose name JSON.stringify would not write as it is (non-ASCII, a quote or backslash, a
 * leading digit, which objects list first, or a name objects treat apart).
 */
export type CsvColumns = { kinds: Int32Array; channelKeys: (Buffer | undefined)[]; inPlace: boolean };

const plainChannel = /^[A-Za-z_][\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const objectNames = new Set(['__proto__', 'constructor', 'prototype']);
const numericIndex = new Map<string, number>(numericFields.map((field, i) => [field, i]));

export function csvColumns(header: readonly string[]): CsvColumns {
  const kinds = new Int32Array(header.length);
  const channelKeys: (Buffer | undefined)[] = [];
  let inPlace = true;
  header.forEach((name, c) => {
    const numeric = numericIndex.get(name);
    if (numeric !== undefined) kinds[c] = numeric;
    else if (name === 'timestamp') kinds[c] = timestampColumn;
    else if (name === 'firmware_version') kinds[c] = firmwareColumn;
    else if (name === 'quality_flag' || name === 'station_id') kinds[c] = ignoredColumn;
    else if (name === 'module_data' || Object.hasOwn(fieldAliases, name) || !plainChannel.test(name) || objectNames.has(name)) inPlace = false;
    else {
      kinds[c] = channelColumn;
      channelKeys[c] = Buffer.from(`"${name}":`, 'latin1');
    }
  });
  return { kinds, channelKeys, inPlace };
}

// Where each field of the last row lies, and where its numeric columns' numbers start (-1: empty) and
// their values: a row makes no garbage.
let fieldStarts = new Int32Array(32);
let fieldEnds = new Int32Array(32);
const values = new Float64Array(numericFields.length);
const given = new Int32Array(numericFields.length);
const comma = 0x2c;
const maxFirmwareLength = 100;

/**
 * The CSV row `b`[start, end) (no quotes, no line break) written as its COPY row straight from its bytes,
 * when every field has the form stations nearly always send: a canonical UTC timestamp, numbers of the
 * usual form (see columnNumberAt) or empty, printable ASCII firmware, channels that are numbers in
 * JavaScript's shortest form or empty. Anything else (another field count, an offset, a word where a
 * number goes, a timestamp past `latestMs`) returns false with nothing written, and the row is parsed
 * and goes through BatchEncoder.add, the one statement of the rules; a test holds the two to the same rows.
 */
export function writeCsvReading(columns: CsvColumns, b: Buffer, start: number, end: number, out: CopyRows, station: Buffer, latestMs: number): boolean {
  const { kinds, channelKeys } = columns;
  const count = kinds.length;
  if (!columns.inPlace || !splitFields(b, start, end, count)) return false;
  let ms = -1;
  let firmware = -1;
  let moduleBytes = 0;
  given.fill(-1);
  for (let c = 0; c < count; c++) {
    const s = fieldStarts[c]!;
    const e = fieldEnds[c]!;
    const kind = kinds[c]!;
    if (kind < numericFields.length) {
      if (e === s) continue;
      if (columnNumberAt(b, s) !== e) return false;
      values[kind] = numberValue();
      given[kind] = s;
    } else if (kind === timestampColumn) {
      const at = s === e ? null : canonicalUtcMs(b, s, e);
      if (at === null || at > latestMs) return false;
      ms = at;
    } else if (kind === firmwareColumn) {
      if (e === s) continue;
      if (e - s > maxFirmwareLength || !printableAscii(b, s, e)) return false;
      firmware = c;
    } else if (kind === channelColumn) {
      if (e === s) continue;
      if (columnNumberAt(b, s) !== e || !columnNumber(b, s, e) || !shortestForm(b, s, e)) return false;
      moduleBytes += channelKeys[c]!.length + e - s + 1;
    }
  }
  // The braces, less the comma before the first member.
  if (moduleBytes + 1 > readingLimits.moduleDataBytes) return false;

  writeMeasuredRow(out, station, ms, given, values);
  if (firmware < 0) out.writeNull();
  else out.writeField(b, fieldStarts[firmware]!, fieldEnds[firmware]!);
  if (moduleBytes === 0) {
    out.writeNull();
  } else {
    // The channels as JSON.stringify writes them, in the header's order.
    const field = out.startJsonb();
    out.writeByte(0x7b);
    let first = true;
    for (let c = 0; c < count; c++) {
      if (kinds[c] !== channelColumn || fieldEnds[c] === fieldStarts[c]) continue;
      if (!first) out.writeByte(comma);
      first = false;
      const key = channelKeys[c]!;
      out.writeBytes(key, 0, key.length);
      out.writeBytes(b, fieldStarts[c]!, fieldEnds[c]!);
    }
    out.writeByte(0x7d);
    out.endField(field);
  }
  out.endRow(ms);
  return true;
}

/** Notes where each of the row's `count` fields lies; false when it has another number of fields. */
function splitFields(b: Buffer, start: number, end: number, count: number): boolean {
  if (fieldStarts.length < count) {
    fieldStarts = new Int32Array(count);
    fieldEnds = new Int32Array(count);
  }
  let s = start;
  for (let c = 0; c < count - 1; c++) {
    const at = b.indexOf(comma, s);
    if (at < 0 || at >= end) return false;
    fieldStarts[c] = s;
    fieldEnds[c] = at;
    s = at + 1;
  }
  const more = b.indexOf(comma, s);
  if (more >= 0 && more < end) return false;
  fieldStarts[count - 1] = s;
  fieldEnds[count - 1] = end;
  return true;
}

function printableAscii(b: Buffer, s: number, e: number): boolean {
  for (let i = s; i < e; i++) if (b[i]! < 0x20 || b[i]! > 0x7e) return false;
  return true;
}
