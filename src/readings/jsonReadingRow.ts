import type { CopyRows } from './copyRows.js';
import { writeMeasuredRow } from './readingColumns.js';
import { ascii, closeBrace, colon, isDigit, type JsonBytes, minus, openBrace, quote } from './jsonBytes.js';
import { canonicalUtcMs, columnNumber, columnNumberAt, numberValue, shortestForm } from './readingBytes.js';
import { numericFields, readingLimits } from './readingRules.js';

/**
 * A reading written as its COPY row straight from the request's bytes, for the form stations nearly
 * always send: a canonical UTC timestamp, numbers or null, plain ASCII text, and channels or a
 * module_data of plain values. Anything else (an offset, an escape, an alias, a key given twice, a
 * number beyond the limits, module_data beside channels) makes it return -1 with nothing written,
 * and the reading is parsed and goes through BatchEncoder.add, the one statement of the rules; a test
 * holds the two to the same rows. A number is read to the double JSON.parse gives it: exactly by one
 * division when its digits fit a double, else by Number, both correctly rounded.
 * Gives where the reading's bytes end (past its closing brace), or -1 when it wrote nothing; a reading
 * it writes has been checked to be one whole JSON object, so the bytes before `start` need no other look.
 */
export function writeJsonReading(json: JsonBytes, start: number, out: CopyRows, station: Buffer, latestMs: number): number {
  if (!readMembers(json, start) || tsAt < 0) return -1;
  const b = json.bytes;
  const ms = canonicalUtcMs(b, tsAt + 1, tsEnd - 1);
  if (ms === null || ms > latestMs || (moduleAt >= 0 && channelCount > 0)) return -1;
  writeMeasuredRow(out, station, ms, numberStarts, numberValues);
  if (firmwareAt < 0) out.writeNull();
  else out.writeField(b, firmwareAt + 1, firmwareEnd - 1);
  let written = true;
  if (moduleAt >= 0 || channelCount > 0) {
    const field = out.startJsonb();
    written = moduleAt >= 0 ? writeModuleData(json, moduleAt, out) : (writeChannels(json, out), true);
    out.endField(field);
    // ASCII: a byte per character; the field holds the version byte besides.
    written &&= out.length - field - 5 <= readingLimits.moduleDataBytes;
  } else {
    out.writeNull();
  }
  if (!written) {
    out.dropRow();
    return -1;
  }
  out.endRow(ms);
  return readingEnd;
}

// What one reading's members were found to be, kept between calls: a reading makes no garbage. For each
// field, where its number starts (-1 for null, -2 when absent) and its value, as JSON.parse reads it.
const numberStarts = new Int32Array(numericFields.length);
const numberValues = new Float64Array(numericFields.length);
let readingEnd = -1;
let tsAt = -1;
let tsEnd = -1;
let firmwareAt = -1;
let firmwareEnd = -1;
let moduleAt = -1;
const maxChannels = 64;
const channels = new Int32Array(maxChannels * 4);
let channelCount = 0;

// The keys a reading may have, by what they are to the row: a numeric column's index, or one of these.
const timestampKey = 100;
const firmwareKey = 101;
const moduleKey = 102;
const ignoredKey = 103;
const parsedKey = 104;
const channelKey = -1;
const keyIds = new Map<string, number>([
  ...numericFields.map((field, i) => [field, i] as [string, number]),
  ['timestamp', timestampKey], ['firmware_version', firmwareKey], ['module_data', moduleKey],
  // Decided by the service, never channels.
  ['quality_flag', ignoredKey], ['station_id', ignoredKey],
  // Aliases: the rules engine compares them with their field.
  ['air_temp', parsedKey], ['air_hum', parsedKey], ['pressure', parsedKey],
]);
const keysByLength: { text: Uint8Array; id: number }[][] = [];
for (const [text, id] of keyIds) (keysByLength[text.length] ??= []).push({ text: ascii(text), id });

function keyId(json: JsonBytes, start: number, end: number): number {
  for (const key of keysByLength[end - start] ?? []) if (json.equals(start, end, key.text)) return key.id;
  return channelKey;
}

// The keys of the last reading read, by place (quotes included), and what each is to the row.
const lastKeys: Buffer[] = [];
const lastIds: number[] = [];

/** Walks the reading's members once, noting where each is; false when the reading is not of the usual form. */
function readMembers(json: JsonBytes, i: number): boolean {
  const b = json.bytes;
  if (b[i] !== openBrace) return false;
  numberStarts.fill(-2);
  tsAt = firmwareAt = moduleAt = -2;
  channelCount = 0;
  i = json.space(i + 1);
  if (b[i] === closeBrace) {
    readingEnd = i + 1;
    return true;
  }
  for (let member = 0; ; member++) {
    const keyStart = i + 1;
    let id: number;
    // Stations send the same keys in the same order: the key at this place in the last reading, compared
    // byte for byte (quotes included), is this one with no scan and no lookup. It passed json.key then.
    const known = lastKeys[member];
    if (known !== undefined && json.equals(i, i + known.length, known)) {
      i += known.length;
      id = lastIds[member]!;
    } else {
      i = json.key(i);
      if (i < 0) return false;
      id = keyId(json, keyStart, i - 1);
      if (member < maxChannels) {
        lastKeys[member] = b.slice(keyStart - 1, i);
        lastIds[member] = id;
      }
    }
    const keyEnd = i - 1;
    i = json.space(i);
    if (b[i] !== colon) return false;
    const at = json.space(i + 1);
    if (id < numericFields.length && id >= 0) {
      if (numberStarts[id] !== -2) return false;
      if (b[at] === nullByte) {
        i = json.literal(at);
        numberStarts[id] = -1;
      } else {
        i = columnNumberAt(b, at);
        if (i < 0) return false;
        numberValues[id] = numberValue();
        numberStarts[id] = at;
      }
      if (i < 0) return false;
    } else if (id === timestampKey) {
      if (tsAt !== -2) return false;
      i = json.string(at);
      if (i < 0 || json.escaped || json.nonAscii) return false;
      tsAt = at;
      tsEnd = i;
    } else if (id === firmwareKey) {
      if (firmwareAt !== -2) return false;
      i = b[at] === quote ? json.string(at) : json.literal(at);
      if (i < 0) return false;
      if (b[at] === quote) {
        if (json.escaped || json.nonAscii || i - at - 2 > maxFirmwareLength) return false;
        firmwareAt = at;
        firmwareEnd = i;
      } else if (b[at] === nullByte) firmwareAt = -1;
      else return false;
    } else if (id === moduleKey) {
      if (moduleAt !== -2) return false;
      i = json.value(at);
      if (i < 0 || (b[at] !== openBrace && b[at] !== nullByte)) return false;
      moduleAt = b[at] === openBrace ? at : -1;
    } else if (id === ignoredKey) {
      i = json.value(at);
      if (i < 0) return false;
    } else if (id === channelKey) {
      if (channelCount === maxChannels || !plainKey(json, keyStart, keyEnd, channels, channelCount)) return false;
      i = plainValue(json, at);
      if (i < 0) return false;
      noteMember(channels, channelCount++, keyStart, keyEnd, at, i);
    } else {
      return false;
    }
    i = json.next(i, closeBrace);
    if (i < 0) return false;
    if (json.closed) {
      readingEnd = i;
      return true;
    }
  }
}

const nullByte = 0x6e;
const maxFirmwareLength = 100;

/** module_data of plain values, written as JSON.stringify writes the parsed object. */
function writeModuleData(json: JsonBytes, i: number, out: CopyRows): boolean {
  const b = json.bytes;
  const members = moduleMembers;
  let count = 0;
  out.writeByte(openBrace);
  i = json.space(i + 1);
  if (b[i] !== closeBrace) {
    for (;;) {
      const keyStart = i + 1;
      i = json.key(i);
      if (i < 0 || count === maxChannels || !plainKey(json, keyStart, i - 1, members, count)) return false;
      const keyEnd = i - 1;
      i = json.space(i);
      if (b[i] !== colon) return false;
      const at = json.space(i + 1);
      i = plainValue(json, at);
      if (i < 0) return false;
      if (count > 0) out.writeByte(comma);
      writeMember(b, keyStart, keyEnd, at, i, out);
      noteMember(members, count++, keyStart, keyEnd, at, i);
      i = json.next(i, closeBrace);
      if (i < 0) return false;
      if (json.closed) break;
    }
  }
  out.writeByte(closeBrace);
  return true;
}
const moduleMembers = new Int32Array(maxChannels * 4);
const comma = 0x2c;

/** The channels given beside the fields, as module_data: JSON.stringify of them in the order given. */
function writeChannels(json: JsonBytes, out: CopyRows): void {
  out.writeByte(openBrace);
  for (let c = 0; c < channelCount; c++) {
    if (c > 0) out.writeByte(comma);
    writeMember(json.bytes, channels[c * 4]!, channels[c * 4 + 1]!, channels[c * 4 + 2]!, channels[c * 4 + 3]!, out);
  }
  out.writeByte(closeBrace);
}

function noteMember(members: Int32Array, k: number, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number): void {
  members[k * 4] = keyStart;
  members[k * 4 + 1] = keyEnd;
  members[k * 4 + 2] = valueStart;
  members[k * 4 + 3] = valueEnd;
}

function writeMember(b: Buffer, keyStart: number, keyEnd: number, valueStart: number, valueEnd: number, out: CopyRows): void {
  out.writeBytes(b, keyStart - 1, keyEnd + 1);
  out.writeByte(colon);
  out.writeBytes(b, valueStart, valueEnd);
}

/**
 * A key that keeps its place in JSON.stringify's output and is not given twice among `previous`: one
 * starting with a digit could be an array index, which objects list first.
 */
function plainKey(json: JsonBytes, start: number, end: number, previous: Int32Array, count: number): boolean {
  if (isDigit(json.bytes[start])) return false;
  for (let k = 0; k < count; k++) {
    const s = previous[k * 4]!;
    if (previous[k * 4 + 1]! - s === end - start && json.bytes.compare(json.bytes, start, end, s, s + end - start) === 0) return false;
  }
  return true;
}

/**
 * A value JSON.stringify writes back byte for byte: a plain ASCII string, true, false, null, or a
 * number in JavaScript's shortest form within the limits; the end of it, or -1.
 */
function plainValue(json: JsonBytes, at: number): number {
  const b = json.bytes;
  if (b[at] === quote) {
    const end = json.string(at);
    return end < 0 || json.escaped || json.nonAscii ? -1 : end;
  }
  if (b[at] === minus || isDigit(b[at])) {
    const end = json.number(at);
    return end >= 0 && columnNumber(b, at, end) && shortestForm(b, at, end) ? end : -1;
  }
  return json.literal(at);
}
