import type { CopyRows } from './copyRows.js';
import { flagWords, readingFieldCount } from './readingColumns.js';
import { ascii, closeBrace, colon, isDigit, type JsonBytes, minus, openBrace, quote } from './jsonBytes.js';
import { plausibilityBounds } from './quality.js';
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
  out.startRow(readingFieldCount);
  out.writeField(station, 0, station.length);
  out.writeTimestamp(ms);
  let suspect = false;
  for (let f = 0; f < numericFields.length; f++) {
    if (numberStarts[f]! < 0) {
      out.writeNull();
      continue;
    }
    const value = numberValues[f]!;
    const bounds = checkedBounds[f];
    if (bounds && !suspect) suspect = value < bounds[0] || value > bounds[1];
    out.writeFloat8(value);
  }
  out.writeWord(suspect ? flagWords.suspect : flagWords.ok);
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

const checkedBounds: (readonly [number, number] | undefined)[] = numericFields.map(
  (field) => (plausibilityBounds as Record<string, readonly [number, number]>)[field],
);

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
        numberValues[id] = lastValue;
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

// What the last number looked at holds, kept between calls.
let integerDigits = 0;
let fractionDigits = 0;
let significantDigits = 0;
let leadingFractionZeros = 0;
let hasExponent = false;
let isZero = true;

/**
 * A number module_data can hold as posted: under 1e9 in magnitude (at most nine integer digits, no
 * exponent), short enough that float8in cannot underflow, and not a negative zero, which the rules
 * engine stores as 0.
 */
function columnNumber(b: Buffer, s: number, e: number): boolean {
  if (e - s > 32) return false;
  const negative = b[s] === minus;
  let i = negative ? s + 1 : s;
  integerDigits = fractionDigits = significantDigits = leadingFractionZeros = 0;
  hasExponent = false;
  isZero = true;
  for (; isDigit(b[i]); i++) {
    integerDigits++;
    if (b[i] !== 0x30 || !isZero) {
      significantDigits++;
      isZero = false;
    }
  }
  if (b[i] === 0x2e) {
    for (i++; isDigit(b[i]); i++) {
      fractionDigits++;
      if (b[i] !== 0x30 || !isZero) {
        significantDigits++;
        isZero = false;
      } else leadingFractionZeros++;
    }
  }
  hasExponent = i < e;
  return !hasExponent && integerDigits <= 9 && !(negative && isZero);
}

/** After columnNumber: whether the text is JavaScript's own for its value (at most 15 digits, none trailing). */
function shortestForm(b: Buffer, s: number, e: number): boolean {
  if (fractionDigits > 0 && b[e - 1] === 0x30) return false;
  return significantDigits <= 15 && !(integerDigits === 1 && b[b[s] === minus ? s + 1 : s] === 0x30 && leadingFractionZeros >= 6);
}

/**
 * A field's number read in one pass: JSON's number grammar, the checks of columnNumber, and its value (left
 * in lastValue), the double JSON.parse gives: one division of two exact doubles when its digits fit one (at
 * most 15, and 10^fraction exact), which IEEE rounds correctly, else through Number. Its end, or -1 when it
 * is not JSON or not a number of the usual form (an exponent, ten or more integer digits, a negative zero,
 * more than 32 bytes).
 */
function columnNumberAt(b: Buffer, s: number): number {
  let i = s;
  const negative = b[i] === minus;
  if (negative) i++;
  let mantissa = 0;
  let integers = 0;
  let fractions = 0;
  let significant = 0;
  let c = b[i];
  if (c === 0x30) {
    i++;
  } else if (c !== undefined && c >= 0x31 && c <= 0x39) {
    for (; c !== undefined && c >= 0x30 && c <= 0x39; c = b[++i]) {
      mantissa = mantissa * 10 + c - 0x30;
      integers++;
    }
    significant = integers;
  } else {
    return -1;
  }
  if (integers > 9) return -1;
  if (b[i] === 0x2e) {
    c = b[++i];
    if (c === undefined || c < 0x30 || c > 0x39) return -1;
    for (; c !== undefined && c >= 0x30 && c <= 0x39; c = b[++i]) {
      mantissa = mantissa * 10 + c - 0x30;
      fractions++;
      if (significant > 0 || c !== 0x30) significant++;
    }
  }
  c = b[i];
  // An exponent, or a digit after a leading zero: not a number of the usual form.
  if (c === 0x65 || c === 0x45 || (c !== undefined && c >= 0x30 && c <= 0x39) || i - s > 32) return -1;
  if (negative && significant === 0) return -1;
  lastValue = significant > 15 || fractions > 22 ? Number(b.toString('latin1', s, i)) : (negative ? -mantissa : mantissa) / powersOfTen[fractions]!;
  return i;
}
let lastValue = 0;

const powersOfTen = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** Epoch milliseconds of `YYYY-MM-DDTHH:MM:SS[.mmm]Z` naming a real time in 1900-9999; null for any other text. */
function canonicalUtcMs(b: Buffer, s: number, e: number): number | null {
  const length = e - s;
  if (length !== 20 && length !== 24) return null;
  for (let k = 0; k < length; k++) {
    const c = b[s + k]!;
    const want = canonicalShape[k === length - 1 ? 23 : k]!;
    if (want === 0 ? !isDigit(c) : c !== want) return null;
  }
  const year = digitsAt(b, s, 4);
  const month = digitsAt(b, s + 5, 2);
  const day = digitsAt(b, s + 8, 2);
  const hour = digitsAt(b, s + 11, 2);
  const minute = digitsAt(b, s + 14, 2);
  const second = digitsAt(b, s + 17, 2);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  if (year < 1900 || month < 1 || month > 12 || day < 1 || day > (month === 2 && !leap ? 28 : daysInMonth[month - 1]!) ||
    hour > 23 || minute > 59 || second > 59) {
    return null;
  }
  return Date.UTC(year, month - 1, day, hour, minute, second, length === 24 ? digitsAt(b, s + 20, 3) : 0);
}

function digitsAt(b: Buffer, at: number, n: number): number {
  let value = 0;
  for (let k = 0; k < n; k++) value = value * 10 + b[at + k]! - 0x30;
  return value;
}

// 0 stands for a digit; a 20-character timestamp's Z is compared with the last place.
const canonicalShape = [...'0000-00-00T00:00:00.000Z'].map((c) => (c === '0' ? 0 : c.charCodeAt(0)));
const daysInMonth = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
