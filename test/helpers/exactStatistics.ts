/**
 * The oracle's arithmetic: a bucket's mean and sample standard deviation computed exactly from its values,
 * apart from the database. Each value is taken as the shortest decimal that reads back as the double
 * (JavaScript's own Number to string), summed exactly in BigInt, and the result rounded to a double once
 * (JavaScript's string to Number, which rounds correctly) from far more digits than a double holds.
 */

/** Decimal places the quotients and the square root are carried to before the one rounding. */
const places = 60n;

type Scaled = { digits: bigint; scale: bigint };

/** A double's shortest decimal as an integer and a power of ten: 21.5 is 215 and 1. */
function decimalOf(value: number): Scaled {
  const [mantissa, exponent = '0'] = String(value).toLowerCase().split('e');
  const [whole, fraction = ''] = mantissa!.split('.');
  const scale = BigInt(fraction.length) - BigInt(exponent);
  const digits = BigInt(`${whole}${fraction}`);
  return scale >= 0n ? { digits, scale } : { digits: digits * 10n ** -scale, scale: 0n };
}

const pow10 = (n: bigint) => 10n ** n;

/** `numerator / denominator` (denominator > 0) as the nearest double, through `places` decimal places. */
function quotientToDouble(numerator: bigint, denominator: bigint): number {
  const negative = numerator < 0n;
  const q = ((negative ? -numerator : numerator) * pow10(places)) / denominator;
  return Number(`${negative ? '-' : ''}${decimalText(q, places)}`);
}

/** An integer scaled by 10^scale as decimal text. */
function decimalText(scaled: bigint, scale: bigint): string {
  const text = scaled.toString().padStart(Number(scale) + 1, '0');
  return `${text.slice(0, text.length - Number(scale))}.${text.slice(text.length - Number(scale))}`;
}

/** The integer square root: the largest r with r * r <= n. */
function isqrt(n: bigint): bigint {
  if (n < 2n) return n;
  // Newton's steps from above (a power of two past the root) fall to the floor of the root.
  let x = 1n << (BigInt(n.toString(2).length) / 2n + 1n);
  for (;;) {
    const y = (x + n / x) >> 1n;
    if (y >= x) return x;
    x = y;
  }
}

export type ExactStatistics = { count: number; mean: number | null; min: number | null; max: number | null; sd: number | null };

/** count, mean, min, max and sample standard deviation of `values` (nulls skipped), exact and rounded once. */
export function exactStatistics(values: readonly (number | null)[]): ExactStatistics {
  const present = values.filter((v): v is number => v !== null);
  const n = BigInt(present.length);
  if (n === 0n) return { count: 0, mean: null, min: null, max: null, sd: null };
  const decimals = present.map(decimalOf);
  const scale = decimals.reduce((s, d) => (d.scale > s ? d.scale : s), 0n);
  let sum = 0n;
  let squares = 0n;
  for (const d of decimals) {
    const v = d.digits * pow10(scale - d.scale);
    sum += v;
    squares += v * v;
  }
  // sum is scaled by 10^scale, squares by 10^(2 scale).
  const mean = quotientToDouble(sum, n * pow10(scale));
  let sd: number | null = null;
  if (n > 1n) {
    // (n * squares - sum^2) / (n (n - 1)), scaled by 10^(2 scale): its root to `places` places.
    const numerator = n * squares - sum * sum;
    const variance = (numerator * pow10(2n * places)) / (n * (n - 1n) * pow10(2n * scale));
    sd = Number(decimalText(isqrt(variance), places));
  }
  return { count: present.length, mean, min: Math.min(...present), max: Math.max(...present), sd };
}

/** Every metric the rollups summarise, as the oracle names them: independent of the service's own list. */
export const allMetrics = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'] as const;

/** Each metric's statistics of a row of values (`<metric>` arrays), named `<metric>_<stat>`. */
export function statisticsOf(row: Record<string, unknown>, metrics: readonly string[] = allMetrics): Record<string, number | null> {
  return Object.fromEntries(metrics.flatMap((m) => {
    const stats = exactStatistics((row[m] as (number | null)[] | undefined) ?? []);
    return (['count', 'mean', 'min', 'max', 'sd'] as const).map((stat) => [`${m}_${stat}`, stats[stat]]);
  }));
}
