export const qualityFlags = ['ok', 'suspect', 'invalid'] as const;
export type QualityFlag = (typeof qualityFlags)[number];

/** Inclusive physical plausibility bounds; only these four metrics are checked, and null never fails. */
export const plausibilityBounds = {
  temperature_c: [-50, 60],
  humidity_rh: [0, 100],
  pressure_hpa: [300, 1100],
  pm2_5: [0, 1000],
} as const;

type Checked = { [K in keyof typeof plausibilityBounds]?: number | null };

// Flattened once: this runs for every ingested row.
const checks = Object.entries(plausibilityBounds) as [keyof Checked, readonly [number, number]][];

/** The flag a new reading gets on ingest: suspect when any checked value lies outside its bounds. */
export function assessQuality(reading: Checked): QualityFlag {
  for (const [field, [min, max]] of checks) {
    const value = reading[field];
    if (value != null && (value < min || value > max)) return 'suspect';
  }
  return 'ok';
}
