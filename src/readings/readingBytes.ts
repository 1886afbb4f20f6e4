import { isDigit, minus } from './jsonBytes.js';

// The values of a reading read straight from a request's bytes, whatever its format: numbers as
// JSON.parse reads their text, and timestamps of the canonical UTC form.

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
export function columnNumber(b: Buffer, s: number, e: number): boolean {
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
export function shortestForm(b: Buffer, s: number, e: number): boolean {
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
export function columnNumberAt(b: Buffer, s: number): number {
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

/** The value of the number columnNumberAt last read. */
export const numberValue = (): number => lastValue;

const powersOfTen = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** Epoch milliseconds of `YYYY-MM-DDTHH:MM:SS[.mmm]Z` naming a real time in 1900-9999; null for any other text. */
export function canonicalUtcMs(b: Buffer, s: number, e: number): number | null {
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
