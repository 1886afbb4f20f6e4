import { fieldAliases, flagFor, numericFields, valuesOf, type NewReading, type QualityFlag } from '../reading.js';
import { flagWords, readingFieldCount } from './columns.js';
import { CopyRows } from './copyRows.js';
import { readingLimits, RowError, checkModuleData, checkText, parseTimestamp } from './rules.js';

/** One reading's row: the station's text as bytes, its time, its measurements in numericFields' order. */
function writeRow(
  rows: CopyRows, station: Buffer, ms: number, values: readonly (number | null)[], flag: QualityFlag,
  firmware: string | null, moduleJson: string | null,
): void {
  rows.startRow(readingFieldCount);
  rows.writeField(station, 0, station.length);
  rows.writeTimestamp(ms);
  for (const value of values) {
    if (value === null) rows.writeNull();
    else rows.writeFloat8(value);
  }
  rows.writeWord(flagWords[flag]);
  rows.writeText(firmware);
  rows.writeJsonb(moduleJson);
  rows.endRow(ms);
}

const numericIndex = new Map<string, number>(numericFields.map((field, i) => [field, i]));
const aliasIndex = new Map<string, number>(Object.entries(fieldAliases).map(([alias, field]) => [alias, numericIndex.get(field)!]));

// Keys the service decides itself (the station, the flag) or reads apart (the timestamp): never channels.
const skippedKeys = new Set(['timestamp', 'quality_flag', 'station_id']);
const maxFirmwareLength = 100;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function numeric(name: string, value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new RowError(`${name} must be a number or null`);
  if (value > readingLimits.maxAbs || value < -readingLimits.maxAbs) throw new RowError(`${name} must be between -1e9 and 1e9, got ${value}`);
  return value;
}

/**
 * Turns posted readings into COPY rows for one station, in the column order of `readingColumns`, each
 * with its timestamp beside it. `add` takes one reading as parsed from the body (a JSON object, or a CSV
 * row made into one): canonical fields and aliases into columns, soil channels and unknown keys into
 * module_data, the quality flag assigned; it throws RowError, adding nothing, when the reading cannot be
 * stored. The encoder and its rows belong to one batch.
 */
export class BatchEncoder {
  readonly rows = new CopyRows();
  private readonly station: Buffer;
  private readonly latestMs: number;
  private readonly values: (number | null)[] = new Array(numericFields.length).fill(null);

  /** `latestMs`: readings after it are row errors (ahead of the server's clock beyond the tolerance). */
  constructor(stationId: string, latestMs = Infinity) {
    this.station = Buffer.from(stationId);
    this.latestMs = latestMs;
  }

  add(raw: unknown): void {
    if (!isPlainObject(raw)) throw new RowError('reading must be a JSON object');
    const ts = parseTimestamp(raw.timestamp);
    const ms = Date.parse(ts);
    if (ms > this.latestMs) throw new RowError(`timestamp ${ts} is ahead of the server's clock by more than the tolerance`);
    const values = this.values.fill(null);
    let firmware: string | null = null;
    let channels: Record<string, unknown> | null = null;
    let explicitModuleData: Record<string, unknown> | null = null;
    let aliased = false;
    for (const key in raw) {
      const value = raw[key];
      const index = numericIndex.get(key);
      if (index !== undefined) {
        values[index] = numeric(key, value);
      } else if (aliasIndex.has(key)) {
        aliased = true;
      } else if (key === 'firmware_version') {
        if (value !== null && typeof value !== 'string') throw new RowError('firmware_version must be a string or null');
        if (typeof value === 'string') {
          if (value.length > maxFirmwareLength) throw new RowError(`firmware_version must be at most ${maxFirmwareLength} characters`);
          checkText('firmware_version', value);
        }
        firmware = value;
      } else if (key === 'module_data') {
        if (value !== null && !isPlainObject(value)) throw new RowError('module_data must be an object or null');
        explicitModuleData = value;
      } else if (!skippedKeys.has(key)) {
        // A null-prototype object: a '__proto__' channel is stored as data, never as a prototype.
        channels ??= Object.create(null) as Record<string, unknown>;
        channels[key] = value;
      }
    }
    if (aliased) {
      for (const alias in fieldAliases) {
        if (!Object.hasOwn(raw, alias)) continue;
        const field = fieldAliases[alias]!;
        const value = numeric(alias, raw[alias]);
        // Both an alias and its canonical field: the same value is fine, two different ones are an error.
        if (Object.hasOwn(raw, field) && raw[field] !== raw[alias]) {
          throw new RowError(`${alias} and ${field} disagree (${JSON.stringify(raw[alias])} and ${JSON.stringify(raw[field])})`);
        }
        values[numericIndex.get(field)!] = value;
      }
    }
    const moduleJson = explicitModuleData || channels ? checkModuleData(explicitModuleData, channels) : null;
    writeRow(this.rows, this.station, ms, values, flagFor(values), firmware, moduleJson);
  }
}

/** Readings already parsed (the demo data, the CLI's imports) as COPY rows, their flags kept. */
export function encodeReadings(stationId: string, readings: readonly NewReading[]): CopyRows {
  const station = Buffer.from(stationId);
  const rows = new CopyRows();
  for (const r of readings) {
    writeRow(rows, station, Date.parse(r.ts), valuesOf(r), r.quality_flag, r.firmware_version, r.module_data === null ? null : JSON.stringify(r.module_data));
  }
  return rows;
}
