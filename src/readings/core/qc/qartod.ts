/**
 * The QARTOD tests as ioos_qc (ioos_qc/qartod.py) defines them, on one metric's series in time order:
 * `values` with NaN for a missing value, `times` in milliseconds since 1970. Each returns one flag per
 * point. The edge cases follow ioos_qc line by line, since a scientist checks these flags by running
 * ioos_qc on a download: the first and last points, missing values, whole seconds for time.
 */

/** QARTOD's flags. */
export const qcFlag = { pass: 1, notEvaluated: 2, suspect: 3, fail: 4, missing: 9 } as const;
export type QcFlag = (typeof qcFlag)[keyof typeof qcFlag];

export type GrossRangeArgs = { fail_span: readonly [number, number]; suspect_span?: readonly [number, number] | null };
export type SpikeArgs = { suspect_threshold?: number | null; fail_threshold?: number | null };
export type RateOfChangeArgs = { threshold: number; fail_threshold?: number | null };
export type FlatLineArgs = { suspect_threshold: number; fail_threshold: number; tolerance?: number };
export type TimeGapArgs = { fail_span?: number };

const filled = (n: number, flag: QcFlag) => new Uint8Array(n).fill(flag);
const sorted = (span: readonly [number, number]) => [Math.min(...span), Math.max(...span)] as const;

/** Fail outside `fail_span`, suspect outside `suspect_span`, missing where there is no value. */
export function grossRange(values: Float64Array, args: GrossRangeArgs): Uint8Array {
  const flags = filled(values.length, qcFlag.pass);
  const [failMin, failMax] = sorted(args.fail_span);
  const suspect = args.suspect_span ? sorted(args.suspect_span) : null;
  for (let i = 0; i < values.length; i++) {
    const x = values[i]!;
    if (Number.isNaN(x)) flags[i] = qcFlag.missing;
    else if (x < failMin || x > failMax) flags[i] = qcFlag.fail;
    else if (suspect && (x < suspect[0] || x > suspect[1])) flags[i] = qcFlag.suspect;
  }
  return flags;
}

/**
 * The "average" method: how far a point lies from the mean of its two neighbours, compared with `>`. A
 * threshold of 0 or none is not applied. The first and last points are not evaluated, nor a point
 * whose neighbour is missing; a missing point is missing.
 */
export function spike(values: Float64Array, args: SpikeArgs): Uint8Array {
  const n = values.length;
  const flags = filled(n, qcFlag.pass);
  for (let i = 1; i < n - 1; i++) {
    const diff = Math.abs(values[i]! - (values[i - 1]! + values[i + 1]!) / 2);
    if (Number.isNaN(diff)) flags[i] = qcFlag.notEvaluated;
    else if (args.fail_threshold && diff > args.fail_threshold) flags[i] = qcFlag.fail;
    else if (args.suspect_threshold && diff > args.suspect_threshold) flags[i] = qcFlag.suspect;
  }
  if (n > 0) flags[0] = flags[n - 1] = qcFlag.notEvaluated;
  markMissing(values, flags);
  return flags;
}

/** Missing where there is no value. */
function markMissing(values: Float64Array, flags: Uint8Array): void {
  for (let i = 0; i < values.length; i++) if (Number.isNaN(values[i]!)) flags[i] = qcFlag.missing;
}

/** Whole seconds between two instants, truncated as numpy's timedelta64[s] does. */
const wholeSeconds = (ms: number) => Math.trunc(ms / 1000);

/**
 * |Δvalue| / Δt per second (Δt in whole seconds) from the point before: suspect over `threshold`, fail
 * over `fail_threshold`. The first point passes; a point after a missing one passes; a missing one is
 * missing. Less than a whole second after the point before, the rate is |Δvalue| itself: ioos_qc divides
 * with numpy's masked division, which masks a quotient by zero and keeps the dividend beneath the mask,
 * and its comparisons read what lies beneath.
 */
export function rateOfChange(values: Float64Array, times: Float64Array, args: RateOfChangeArgs): Uint8Array {
  const flags = filled(values.length, qcFlag.pass);
  for (let i = 1; i < values.length; i++) {
    const seconds = wholeSeconds(times[i]! - times[i - 1]!);
    const change = values[i]! - values[i - 1]!;
    const rate = Math.abs(seconds === 0 ? change : change / seconds);
    if (args.fail_threshold != null && rate > args.fail_threshold) flags[i] = qcFlag.fail;
    else if (rate > args.threshold) flags[i] = qcFlag.suspect;
  }
  markMissing(values, flags);
  return flags;
}

/** The median spacing of `times` in whole seconds, as ioos_qc takes it for the flat-line test. */
export function medianInterval(times: Float64Array): number {
  const spacings = new Map<number, number>();
  countSpacings(spacings, times, 1000);
  return medianSpacing(spacings);
}

/**
 * Adds the spacings of `times` (ascending, in units of which a second holds `perSecond`) to `counts`,
 * counted by value in microseconds (a station's are mostly one value).
 */
export function countSpacings(counts: Map<number, number>, times: Float64Array, perSecond: number): void {
  const toMicros = 1_000_000 / perSecond;
  for (let i = 0; i + 1 < times.length; i++) {
    const gap = Math.round((times[i + 1]! - times[i]!) * toMicros);
    counts.set(gap, (counts.get(gap) ?? 0) + 1);
  }
}

/** The median of spacings counted by value in microseconds, in whole seconds as ioos_qc truncates it (NaN for none). */
export function medianSpacing(counts: ReadonlyMap<number, number>): number {
  let count = 0;
  for (const n of counts.values()) count += n;
  if (count < 1) return NaN;
  const ordered = [...counts.keys()].sort((a, b) => a - b);
  const nth = (k: number) => {
    let seen = 0;
    for (const gap of ordered) if ((seen += counts.get(gap)!) > k) return gap;
    return NaN;
  };
  const middle = count >> 1;
  return wholeSeconds((count % 2 ? nth(middle) : (nth(middle - 1) + nth(middle)) / 2) / 1000);
}

/**
 * The whole series' facts the flat-line test takes beyond the points given, when those are part of a
 * longer series: its length and its median spacing (whole seconds).
 */
export type SeriesFacts = { length: number; interval: number };

/**
 * A point is flat when the values of the window of `count + 1` points ending at it (missing ones left
 * out) span less than `tolerance`, count being a threshold in seconds over the series' median spacing.
 * Suspect for `suspect_threshold`, then fail for `fail_threshold`; the first `count` points pass. A
 * series of fewer than three points passes whole, missing values included.
 */
export function flatLine(values: Float64Array, times: Float64Array, args: FlatLineArgs, series?: SeriesFacts): Uint8Array {
  const n = values.length;
  const flags = filled(n, qcFlag.pass);
  if ((series?.length ?? n) < 3) return flags;
  const interval = series?.interval ?? medianInterval(times);
  const { start, lastValue } = flatStarts(values, args.tolerance ?? 0);
  for (const [threshold, flag] of [[args.suspect_threshold, qcFlag.suspect], [args.fail_threshold, qcFlag.fail]] as const) {
    const count = Math.trunc(Math.trunc(threshold) / interval);
    if (!Number.isFinite(count) || count < 0) continue;
    // The window [i - count, i] spans less than the tolerance when it lies within the flat stretch ending
    // at i, and holds a value.
    for (let i = count; i < n; i++) if (start[i]! <= i - count && lastValue[i]! >= i - count) flags[i] = flag;
  }
  markMissing(values, flags);
  return flags;
}

/**
 * For each point, where the longest stretch of points ending at it whose values (missing ones left out)
 * span less than `tolerance` starts, and the last point up to it with a value (-1 for none). A window
 * ending at a point spans less than the tolerance exactly when it starts no earlier than its stretch:
 * the span only grows as a window reaches back.
 */
function flatStarts(values: Float64Array, tolerance: number): { start: Int32Array; lastValue: Int32Array } {
  const n = values.length;
  const start = new Int32Array(n);
  const lastValue = new Int32Array(n);
  // Monotonic queues of indices, for the stretch's minimum and maximum: each index enters once.
  const mins = new Int32Array(n);
  const maxs = new Int32Array(n);
  let minHead = 0, minTail = 0, maxHead = 0, maxTail = 0;
  let from = 0;
  let last = -1;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    if (!Number.isNaN(x)) {
      last = i;
      while (minTail > minHead && values[mins[minTail - 1]!]! >= x) minTail--;
      mins[minTail++] = i;
      while (maxTail > maxHead && values[maxs[maxTail - 1]!]! <= x) maxTail--;
      maxs[maxTail++] = i;
      // Not `< tolerance` (NaN for a tolerance of 0 reaches no point): the stretch starts after the point
      // that leaves first.
      while (!(Math.abs(values[maxs[maxHead]!]! - values[mins[minHead]!]!) < tolerance)) {
        from = Math.min(mins[minHead]!, maxs[maxHead]!) + 1;
        while (minHead < minTail && mins[minHead]! < from) minHead++;
        while (maxHead < maxTail && maxs[maxHead]! < from) maxHead++;
        if (minHead === minTail) break;
      }
    }
    start[i] = from;
    lastValue[i] = last;
  }
  return { start, lastValue };
}

/**
 * Fail for a point more than `fail_span` hours after the point before (two hours when not given); the
 * first point takes the second's flag. Values play no part.
 */
export function timeGap(times: Float64Array, args: TimeGapArgs): Uint8Array {
  const n = times.length;
  const flags = filled(n, qcFlag.pass);
  const spanMs = Math.trunc((args.fail_span ?? 2) * 3600) * 1000;
  for (let i = 1; i < n; i++) if (times[i]! - times[i - 1]! > spanMs) flags[i] = qcFlag.fail;
  if (n > 1) flags[0] = flags[1]!;
  return flags;
}

// ioos_qc's qartod_compare: the flag of highest precedence any test gave.
const precedence: readonly QcFlag[] = [qcFlag.missing, qcFlag.notEvaluated, qcFlag.pass, qcFlag.suspect, qcFlag.fail];
/** The flag of higher precedence of two, at [a * 10 + b]. */
const worse = new Uint8Array(100);
for (const a of precedence) for (const b of precedence) worse[a * 10 + b] = precedence.indexOf(a) > precedence.indexOf(b) ? a : b;

/** The flags of several tests as one, by QARTOD's precedence (missing < not evaluated < pass < suspect < fail). */
export function aggregateFlags(results: readonly Uint8Array[], n: number): Uint8Array {
  if (results.length === 0) return filled(n, qcFlag.notEvaluated);
  const out = filled(n, qcFlag.missing);
  // Five tests at a time in one pass; missing, which ranks lowest, stands for a test not there.
  for (let from = 0; from < results.length; from += 5) {
    const [a, b, c, d, e] = Array.from({ length: 5 }, (_, k) => results[from + k] ?? out);
    for (let i = 0; i < n; i++) {
      out[i] = worse[worse[worse[worse[worse[out[i]! * 10 + a![i]!]! * 10 + b![i]!]! * 10 + c![i]!]! * 10 + d![i]!]! * 10 + e![i]!]!;
    }
  }
  return out;
}
