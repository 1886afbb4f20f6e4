// The rules every posted reading is held to, whatever the body's format: see BatchEncoder.

import { finerThanMillisecond, finerThanMillisecondReason } from '../core/millisecond.js';

/**
 * What a row may hold, checked before anything is written so that the database never refuses a row and
 * one bad row never costs the batch. Numbers: |x| <= 1e9, far beyond any sensor, and small enough that
 * no rollup sum can overflow (a bucket would need 1e299 readings). module_data: nested at most 16 deep
 * and at most 16 KiB as JSON, ample for a board's diagnostics. Text: no NUL (PostgreSQL cannot store
 * it) and no lone UTF-16 surrogate (it is not Unicode); other characters are kept as sent.
 */
export const readingLimits = { maxAbs: 1e9, moduleDataDepth: 16, moduleDataBytes: 16 * 1024 } as const;

// A NUL, or a surrogate half without its other half.
// eslint-disable-next-line no-control-regex -- finding NUL is the point
const unstorableText = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function checkText(what: string, value: string): void {
  if (unstorableText.test(value)) throw new RowError(`${what} contains a NUL character, an unpaired surrogate or bytes that are not UTF-8`);
}

/** Walks a module_data value: depth, text and numbers; throws RowError naming the first problem. */
function checkModuleValue(value: unknown, depth: number): void {
  if (typeof value === 'string') return checkText('module_data', value);
  if (typeof value === 'number') {
    if (Math.abs(value) > readingLimits.maxAbs) throw new RowError(`module_data numbers must be between -1e9 and 1e9, got ${value}`);
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  if (depth >= readingLimits.moduleDataDepth) throw new RowError(`module_data is nested more than ${readingLimits.moduleDataDepth} levels deep`);
  if (Array.isArray(value)) {
    for (const item of value) checkModuleValue(item, depth + 1);
    return;
  }
  for (const key in value as Record<string, unknown>) {
    checkText('a module_data key', key);
    checkModuleValue((value as Record<string, unknown>)[key], depth + 1);
  }
}

// ISO 8601 date-time: a date, 'T' or a space, hh:mm[:ss[.fraction]], optional Z or ±hh[:mm] offset.
const isoDateTime = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** A row that cannot be stored, with the reason a station operator reads in error_details. */
export class RowError extends Error {}

// What stations send nearly always: UTC with a Z, whole seconds or milliseconds.
const canonicalUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;

const daysInMonth = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Whether the fixed-position fields of a canonical UTC timestamp name a real date and time. */
function isCalendarTime(value: string): boolean {
  const year = Number(value.slice(0, 4));
  const month = Number(value.slice(5, 7));
  const day = Number(value.slice(8, 10));
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return (
    year >= 1900 && month >= 1 && month <= 12 && day >= 1 &&
    day <= (month === 2 && !leap ? 28 : daysInMonth[month - 1]!) &&
    Number(value.slice(11, 13)) <= 23 && Number(value.slice(14, 16)) <= 59 && Number(value.slice(17, 19)) <= 59
  );
}

/**
 * Parses an ISO 8601 date-time; one without an offset is UTC. Returns the canonical ISO string, which
 * names the same instant: a time between two milliseconds is a RowError, never truncated.
 */
export function parseTimestamp(value: unknown): string {
  if (typeof value !== 'string') throw new RowError(value === undefined || value === null ? 'timestamp is required' : 'timestamp must be a string');
  if (canonicalUtc.test(value) && isCalendarTime(value)) {
    return value.length === 24 ? value : `${value.slice(0, 19)}.000Z`;
  }
  const match = isoDateTime.exec(value);
  if (!match) throw new RowError(`timestamp '${value.slice(0, 40)}' is not an ISO 8601 date-time`);
  const text = match[7] ? value : `${value}Z`;
  const ms = Date.parse(text.replace(' ', 'T'));
  const [, y, mo, d, h, mi, s] = match;
  if (Number.isNaN(ms) || Number(h) > 23 || Number(mi) > 59 || Number(s ?? 0) > 59) {
    throw new RowError(`timestamp '${value.slice(0, 40)}' is not a valid date-time`);
  }
  // Date.parse rolls 2026-02-30 over into March; a calendar date that does not exist is an error.
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (Number(mo) < 1 || Number(d) < 1 || Number(d) > daysInMonth) {
    throw new RowError(`timestamp '${value.slice(0, 40)}' is not a valid date-time`);
  }
  // Date.parse drops what is below the millisecond: two readings of one millisecond would then be duplicates.
  if (finerThanMillisecond(value)) throw new RowError(`timestamp '${value.slice(0, 40)}' ${finerThanMillisecondReason}`);
  const date = new Date(ms);
  if (date.getUTCFullYear() < 1900 || date.getUTCFullYear() > 9999) throw new RowError('timestamp must be between the years 1900 and 9999');
  return date.toISOString();
}


/**
 * module_data as stored: the object posted, plus the channels given beside it (the same key with two
 * values is an error), checked for depth, text, numbers and size. Returns its JSON text.
 */
export function checkModuleData(explicit: Record<string, unknown> | null, channels: Record<string, unknown> | null): string {
  // Checked before merging, which compares values as JSON: a value nested thousands deep never gets there.
  if (explicit) checkModuleValue(explicit, 0);
  if (channels) checkModuleValue(channels, 0);
  const json = JSON.stringify(channels ? mergeModuleData(explicit, channels) : explicit);
  // UTF-8 takes at most three bytes per UTF-16 unit: only a long text needs counting.
  if (json.length * 3 > readingLimits.moduleDataBytes && Buffer.byteLength(json) > readingLimits.moduleDataBytes) {
    throw new RowError(`module_data is larger than ${readingLimits.moduleDataBytes} bytes as JSON`);
  }
  return json;
}

/** module_data as posted, plus the channels given beside it; the same key with two values is an error. */
function mergeModuleData(explicit: Record<string, unknown> | null, channels: Record<string, unknown> | null): Record<string, unknown> {
  const merged = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(explicit ?? {})) merged[key] = value;
  for (const key in channels) {
    if (Object.hasOwn(merged, key) && JSON.stringify(merged[key]) !== JSON.stringify(channels[key])) {
      throw new RowError(`${key} is given both as a channel and in module_data, with different values`);
    }
    merged[key] = channels[key];
  }
  return merged;
}
