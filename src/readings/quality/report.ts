import type { PgPool } from '../../db/pool.js';
import type { QcConfig } from '../core/qc/config.js';
import { stationQcFlags, type StationFlags } from '../core/qc/flags.js';
import { qcFlag } from '../core/qc/qartod.js';

/** A run of missing readings: the first and last instants missing, and how many. */
type Gap = { start: string; end: string; missing: number };
type FlatLine = { metric: string; start: string; end: string; readings: number; value: number };

const flagNames: Record<number, string> = {
  [qcFlag.pass]: 'pass', [qcFlag.notEvaluated]: 'not_evaluated', [qcFlag.suspect]: 'suspect', [qcFlag.fail]: 'fail', [qcFlag.missing]: 'missing',
};
const iso = (ms: number) => new Date(ms).toISOString();
/** Readings a span implies at one every `interval` seconds, rounded up. */
const expectedIn = (ms: number, interval: number) => Math.max(0, Math.ceil(ms / 1000 / interval));
/** Count against expected, in percent to one decimal (half up); null when none was expected. */
const coverage = (observed: number, expected: number) => (expected > 0 ? Math.floor((observed / expected) * 1000 + 0.5) / 10 : null);

export type ReportArgs = { stationId: string; from: string; to: string; intervalSeconds: number; latest: number | null; now: number };

/**
 * A station's quality over whole UTC days `from`..`to` (up to now): coverage against its interval, the
 * gaps (runs of more than three missing readings), each metric's flat-line episodes and spikes, and per
 * day coverage and how many readings each flag got, per metric.
 */
export async function qualityReport(pool: PgPool, args: ReportArgs, config: QcConfig) {
  const start = Date.parse(`${args.from}T00:00:00Z`);
  const end = Math.max(start, Math.min(Date.parse(`${args.to}T00:00:00Z`) + 86_400_000, args.now));
  const flags = await stationQcFlags(pool, args.stationId, { from: iso(start), to: iso(end) }, config);
  const expected = expectedIn(end - start, args.intervalSeconds);
  return {
    station: args.stationId,
    from: args.from,
    to: args.to,
    interval_seconds: args.intervalSeconds,
    expected,
    observed: flags.times.length,
    coverage_pct: coverage(flags.times.length, expected),
    gaps: gapsOf(flags.times, start, end, args.intervalSeconds),
    flat_lines: flatLinesOf(flags, config),
    spikes: Object.fromEntries(flags.streams.flatMap((s) => {
      const spike = s.tests.spike_test;
      return spike ? [[s.stream, spike.reduce((n, f) => n + (f === qcFlag.suspect || f === qcFlag.fail ? 1 : 0), 0)]] : [];
    })),
    daily: dailyOf(flags, start, end, args.intervalSeconds),
    latest_age_minutes: args.latest === null ? null : Math.floor((args.now - args.latest) / 6_000) / 10,
  };
}

/**
 * Runs of more than three missing readings: between two readings, the instants the interval implies
 * between them (their spacing in intervals, rounded, less one); before the first reading from the start
 * of the range, after the last up to its end (or now).
 */
export function gapsOf(times: Float64Array, start: number, end: number, interval: number): Gap[] {
  const step = interval * 1000;
  const gaps: Gap[] = [];
  const add = (first: number, missing: number) => {
    if (missing > 3) gaps.push({ start: iso(first), end: iso(first + (missing - 1) * step), missing });
  };
  if (times.length === 0) {
    add(start, expectedIn(end - start, interval));
    return gaps;
  }
  add(start, Math.round((times[0]! - start) / step));
  for (let i = 1; i < times.length; i++) add(times[i - 1]! + step, Math.round((times[i]! - times[i - 1]!) / step) - 1);
  add(times[times.length - 1]! + step, expectedIn(end - times[times.length - 1]!, interval) - 1);
  return gaps;
}

/**
 * Per metric with a flat-line test: the runs of consecutive readings whose values (missing ones left out)
 * stay within the test's tolerance, taken from the first reading on, that last at least its suspect
 * threshold.
 */
function flatLinesOf(flags: StationFlags, config: QcConfig): FlatLine[] {
  const episodes: FlatLine[] = [];
  flags.streams.forEach((s, index) => {
    const test = config.streams[s.stream]?.qartod.flat_line_test;
    if (!test) return;
    const values = flags.values[index]!;
    const tolerance = test.tolerance ?? 0;
    let first = -1;
    let last = -1;
    let readings = 0;
    let min = Infinity;
    let max = -Infinity;
    const close = () => {
      if (first >= 0 && (flags.times[last]! - flags.times[first]!) / 1000 >= test.suspect_threshold) {
        episodes.push({ metric: s.stream, start: iso(flags.times[first]!), end: iso(flags.times[last]!), readings, value: values[first]! });
      }
    };
    for (let i = 0; i < values.length; i++) {
      const x = values[i]!;
      if (Number.isNaN(x)) continue;
      if (first >= 0 && Math.max(max, x) - Math.min(min, x) < tolerance) {
        min = Math.min(min, x);
        max = Math.max(max, x);
        last = i;
        readings++;
        continue;
      }
      close();
      first = last = i;
      readings = 1;
      min = max = x;
    }
    close();
  });
  return episodes;
}

/** Per UTC day of the range: expected, observed, coverage and each metric's count of readings per flag. */
function dailyOf(flags: StationFlags, start: number, end: number, interval: number) {
  const days = [];
  let i = 0;
  for (let day = start; day < end; day += 86_400_000) {
    const next = Math.min(day + 86_400_000, end);
    const first = i;
    while (i < flags.times.length && flags.times[i]! < next) i++;
    const expected = expectedIn(next - day, interval);
    days.push({
      date: iso(day).slice(0, 10),
      expected,
      observed: i - first,
      coverage_pct: coverage(i - first, expected),
      flags: Object.fromEntries(flags.streams.map((s) => {
        const counts: Record<string, number> = { pass: 0, not_evaluated: 0, suspect: 0, fail: 0, missing: 0 };
        for (let r = first; r < i; r++) counts[flagNames[s.aggregate[r]!]!]!++;
        return [s.stream, counts];
      })),
    });
  }
  return days;
}
