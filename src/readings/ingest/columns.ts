import { qualityFlags, type QualityFlag } from '../quality.js';

/** The columns of `readings` a batch's COPY rows hold, in their order. */
export const readingColumns =
  'station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data';
export const readingFieldCount = 15;

/** A row's quality flag is its 13th field (after the station, the time and the ten measurements). */
export const flagField = 12;

/** Each quality flag's text as bytes, made once: every row writes one. */
export const flagWords: Record<QualityFlag, Buffer> = Object.fromEntries(qualityFlags.map((flag) => [flag, Buffer.from(flag)])) as Record<QualityFlag, Buffer>;
