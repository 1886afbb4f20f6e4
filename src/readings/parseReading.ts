import { assessQuality } from './quality.js';
import type { NewReading } from './store.js';

/** Canonical numeric fields a reading may carry. */
export const numericFields = [
  'temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0',
  'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index',
] as const;
type NumericField = (typeof numericFields)[number];

/** Device-native names for canonical fields. */
export const fieldAliases: Record<string, NumericField> = {
  air_temp: 'temperature_c',
  air_hum: 'humidity_rh',
  pressure: 'pressure_hpa',
};

/** Channels with no reading column: kept in module_data under their own names. */
export const moduleChannels = ['soil_temp', 'soil_moist'] as const;

/** Keys a device may send that the service itself decides: ignored rather than stored as channels. */
const ignoredKeys = new Set(['quality_flag', 'station_id']);

const maxFirmwareLength = 100;

// ISO 8601 date-time: a date, 'T' or a space, hh:mm[:ss[.fraction]], optional Z or ±hh[:mm] offset.
const isoDateTime = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

/** A row that cannot be stored, with the reason a station operator reads in error_details. */
export class RowError extends Error {}

// What stations send nearly always: UTC with a Z, whole seconds or milliseconds.
const canonicalUtc = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{3})?Z$/;

/** Parses an ISO 8601 date-time; one without an offset is UTC. Returns the canonical ISO string. */
export function parseTimestamp(value: unknown): string {
  if (typeof value !== 'string') throw new RowError(value === undefined || value === null ? 'timestamp is required' : 'timestamp must be a string');
  if (canonicalUtc.test(value)) {
    // A real calendar date survives the round trip unchanged; 2026-02-30 comes back as March.
    const iso = new Date(Date.parse(value)).toISOString();
    if (iso === value || iso === `${value.slice(0, 19)}.000Z`) return iso;
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
  const date = new Date(ms);
  if (date.getUTCFullYear() < 1900 || date.getUTCFullYear() > 9999) throw new RowError('timestamp must be between the years 1900 and 9999');
  return date.toISOString();
}

function numeric(name: string, value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new RowError(`${name} must be a number or null`);
  return value;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Turns one posted reading into a row to store: canonical fields and aliases into columns, soil
 * channels and unknown keys into module_data, the quality flag assigned. Throws RowError.
 */
export function parseReading(raw: unknown): NewReading {
  if (!isPlainObject(raw)) throw new RowError('reading must be a JSON object');
  const values: Record<NumericField, number | null> = {
    temperature_c: null, humidity_rh: null, pressure_hpa: null, altitude_m: null, pm1_0: null,
    pm2_5: null, pm10: null, co2_ppm: null, co_ppm: null, uv_index: null,
  };
  let firmware: string | null = null;
  // A null-prototype object: a '__proto__' channel is stored as data, never as a prototype.
  const channels: Record<string, unknown> = Object.create(null);
  let channelCount = 0;
  let explicitModuleData: Record<string, unknown> | null = null;

  for (const key of Object.keys(raw)) {
    const value = raw[key];
    if (key === 'timestamp' || ignoredKeys.has(key)) continue;
    if (key in values) {
      values[key as NumericField] = numeric(key, value);
    } else if (Object.hasOwn(fieldAliases, key)) {
      values[fieldAliases[key]!] = numeric(key, value);
    } else if (key === 'firmware_version') {
      if (value !== null && typeof value !== 'string') throw new RowError('firmware_version must be a string or null');
      if (typeof value === 'string' && value.length > maxFirmwareLength) throw new RowError(`firmware_version must be at most ${maxFirmwareLength} characters`);
      firmware = value;
    } else if (key === 'module_data') {
      if (value !== null && !isPlainObject(value)) throw new RowError('module_data must be an object or null');
      explicitModuleData = value;
    } else {
      channels[key] = value;
      channelCount++;
    }
  }
  // Both an alias and its canonical field: the same value is fine, two different ones are an error.
  for (const [alias, field] of Object.entries(fieldAliases)) {
    if (Object.hasOwn(raw, alias) && Object.hasOwn(raw, field) && raw[alias] !== raw[field]) {
      throw new RowError(`${alias} and ${field} disagree (${JSON.stringify(raw[alias])} and ${JSON.stringify(raw[field])})`);
    }
  }

  let moduleData: Record<string, unknown> | null = null;
  if (explicitModuleData || channelCount > 0) {
    moduleData = Object.create(null) as Record<string, unknown>;
    for (const [key, value] of Object.entries(explicitModuleData ?? {})) moduleData[key] = value;
    for (const key of Object.keys(channels)) {
      if (Object.hasOwn(moduleData, key) && JSON.stringify(moduleData[key]) !== JSON.stringify(channels[key])) {
        throw new RowError(`${key} is given both as a channel and in module_data, with different values`);
      }
      moduleData[key] = channels[key];
    }
  }

  const ts = parseTimestamp(raw.timestamp);
  return { ts, ...values, quality_flag: assessQuality(values), firmware_version: firmware, module_data: moduleData };
}
