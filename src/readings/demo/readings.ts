import { flagFor, valuesOf } from '../reading.js';
import type { NewReading } from '../reading.js';

export type DemoClimate = {
  temperature: number;
  temperatureSwing: number;
  humidity: number;
  pressure: number;
  altitude: number;
  pm25: number;
  co2: number;
};

/** mulberry32: a small seeded generator, so that the demo data is the same on every machine. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * Plausible one-minute readings from `start` for `minutes`: a diurnal temperature cycle, humidity
 * moving against it, slow pressure systems, particulate peaks at rush hours, and (with `dustEvent`) one
 * dust event that the plausibility check flags as suspect. Every cycle follows the clock, not the
 * position in the run, so that readings generated later continue the earlier ones without a jump.
 */
export function* generateDemoReadings(
  climate: DemoClimate, start: Date, minutes: number, seed: number, { dustEvent = true } = {},
): Generator<NewReading> {
  const random = seededRandom(seed);
  const noise = (scale: number) => (random() - 0.5) * 2 * scale;
  const dustAt = dustEvent ? Math.floor(minutes * 0.6) : -Infinity;
  for (let i = 0; i < minutes; i++) {
    const at = new Date(start.getTime() + i * 60_000);
    const hour = at.getUTCHours() + at.getUTCMinutes() / 60;
    const day = at.getTime() / 86_400_000;
    const diurnal = Math.sin(((hour - 9) / 24) * 2 * Math.PI);
    const temperature = climate.temperature + climate.temperatureSwing * diurnal + 2 * Math.sin(day / 3) + noise(0.3);
    const humidity = Math.min(100, Math.max(5, climate.humidity - 15 * diurnal + noise(2)));
    const pressure = climate.pressure + 8 * Math.sin(day / 4.5) + noise(0.2);
    const rush = Math.exp(-((hour - 8) ** 2) / 2) + Math.exp(-((hour - 18) ** 2) / 2);
    const inDust = i >= dustAt && i < dustAt + 20;
    const pm25 = inDust ? 1180 + noise(40) : Math.max(0.5, climate.pm25 * (1 + rush) + noise(1.5));
    const reading = {
      ts: at.toISOString(),
      temperature_c: round(temperature, 2),
      humidity_rh: round(humidity, 1),
      pressure_hpa: round(pressure, 1),
      altitude_m: climate.altitude,
      pm1_0: round(pm25 * 0.6, 1),
      pm2_5: round(pm25, 1),
      pm10: round(pm25 * 1.7, 1),
      co2_ppm: round(climate.co2 + 25 * rush + noise(5), 0),
      co_ppm: round(0.2 + 0.3 * rush + noise(0.05), 2),
      uv_index: round(Math.max(0, 8 * Math.sin(((hour - 6) / 12) * Math.PI)), 1),
      firmware_version: '2.4.1',
      module_data: null,
    };
    yield { ...reading, quality_flag: flagFor(valuesOf(reading)) };
  }
}
