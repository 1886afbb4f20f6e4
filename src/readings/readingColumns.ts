import type { CopyRows } from './copyRows.js';
import { plausibilityBounds, qualityFlags, type QualityFlag } from './quality.js';
import { numericFields } from './readingRules.js';

/** The columns of `readings` a batch's COPY rows hold, in their order. */
export const readingColumns =
  'station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data';
export const readingFieldCount = 15;

/** A row's quality flag is its 13th field (after the station, the time and the ten measurements). */
export const flagField = 12;

/** Each quality flag's text as bytes, made once: every row writes one. */
export const flagWords: Record<QualityFlag, Buffer> = Object.fromEntries(qualityFlags.map((flag) => [flag, Buffer.from(flag)])) as Record<QualityFlag, Buffer>;

const checkedBounds: (readonly [number, number] | undefined)[] = numericFields.map(
  (field) => (plausibilityBounds as Record<string, readonly [number, number]>)[field],
);

/**
 * The fields of a row read from a body's bytes up to its flag: the station, the time, the ten
 * measurements in numericFields' order (null where `given` is negative, else `values`' double) and the
 * flag they imply, suspect when one is outside its plausibility bounds.
 */
export function writeMeasuredRow(out: CopyRows, station: Buffer, ms: number, given: Int32Array, values: Float64Array): void {
  out.startRow(readingFieldCount);
  out.writeField(station, 0, station.length);
  out.writeTimestamp(ms);
  let suspect = false;
  for (let f = 0; f < numericFields.length; f++) {
    if (given[f]! < 0) {
      out.writeNull();
      continue;
    }
    const value = values[f]!;
    const bounds = checkedBounds[f];
    if (bounds && !suspect) suspect = value < bounds[0] || value > bounds[1];
    out.writeFloat8(value);
  }
  out.writeWord(suspect ? flagWords.suspect : flagWords.ok);
}
