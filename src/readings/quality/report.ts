import { readInOneSnapshot } from '../../db/oneSnapshot.js';
import type { PgPool } from '../../db/pool.js';
import { qcStreams, type QcConfig } from '../core/qc/config.js';
import { qcFlag } from '../core/qc/qartod.js';
import { flaggedReadings, type FlaggedBatch } from '../core/qc/series.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';

/** A run of missing readings: the first and last instants missing, and how many. */
type Gap = { start: string; end: string; missing: number };
type FlatLine = { metric: string; start: string; end: string; readings: number; value: number };
type FlagCounts = { pass: number; not_evaluated: number; suspect: number; fail: number; missing: number };

const flagNames: Record<number, keyof FlagCounts> = {
  [qcFlag.pass]: 'pass', [qcFlag.notEvaluated]: 'not_evaluated', [qcFlag.suspect]: 'suspect', [qcFlag.fail]: 'fail', [qcFlag.missing]: 'missing',
};
const flagOrder = [qcFlag.pass, qcFlag.notEvaluated, qcFlag.suspect, qcFlag.fail, qcFlag.missing];
const flagIndex = new Uint8Array(10);
flagOrder.forEach((flag, i) => { flagIndex[flag] = i; });
const day = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
/** Readings a span implies at one every `interval` seconds, rounded up. */
const expectedIn = (ms: number, interval: number) => Math.max(0, Math.ceil(ms / 1000 / interval));
/** Count against expected, in percent to one decimal (half up); null when none was expected. */
const coverage = (observed: number, expected: number) => (expected > 0 ? Math.floor((observed / expected) * 1000 + 0.5) / 10 : null);

export type ReportArgs = { stationId: string; from: string; to: string; intervalSeconds: number; latest: number | null; now: number; spacings?: SeriesSpacings };

/**
 * A station's quality over whole UTC days `from`..`to` (up to now): coverage against its interval, the
 * gaps (runs of more than three missing readings), each metric's flat-line episodes and spikes, and per
 * day coverage and how many readings each flag got, per metric. The readings are read and flagged in
 * one pass, batch by batch, in one snapshot: memory holds one batch whatever the range.
 */
export async function qualityReport(pool: PgPool, args: ReportArgs, config: QcConfig) {
  const start = Date.parse(`${args.from}T00:00:00Z`);
  const end = Math.max(start, Math.min(Date.parse(`${args.to}T00:00:00Z`) + day, args.now));
  const report = new ReportTally(start, end, args.intervalSeconds, config);
  await readInOneSnapshot(pool, async (client) => {
    for await (const batch of flaggedReadings(client, args.stationId, config, report.fields, { from: iso(start), to: iso(end) }, { spacings: args.spacings, kept: ['spike_test'] })) report.add(batch);
  });
  const expected = expectedIn(end - start, args.intervalSeconds);
  return {
    station: args.stationId,
    from: args.from,
    to: args.to,
    interval_seconds: args.intervalSeconds,
    expected,
    observed: report.observed,
    coverage_pct: coverage(report.observed, expected),
    gaps: report.finishGaps(),
    flat_lines: report.finishFlatLines(),
    spikes: report.spikes,
    daily: report.daily.map((d, i) => {
      const expectedToday = expectedIn(Math.min(start + (i + 1) * day, end) - (start + i * day), args.intervalSeconds);
      return { date: iso(start + i * day).slice(0, 10), expected: expectedToday, observed: d.observed, coverage_pct: coverage(d.observed, expectedToday), flags: d.flags };
    }),
    latest_age_minutes: args.latest === null ? null : Math.floor((args.now - args.latest) / 6_000) / 10,
  };
}

/** A run of readings of one metric within the flat-line tolerance, as it grows. */
type Run = { first: number; last: number; readings: number; min: number; max: number; value: number };

/** The report's counts, taken window by window along the station's readings in time order. */
class ReportTally {
  observed = 0;
  /** The metrics with tests, as indexes into qcStreams: those the flags are computed for. */
  readonly fields: number[];
  spikes: Record<string, number> = {};
  /** Per day, readings; per stream, per day and flag (in flagOrder), readings. */
  private readonly observedByDay: Int32Array;
  private readonly flagsByDay = new Map<string, Int32Array>();
  private readonly gaps: Gap[] = [];
  private readonly flatLines: FlatLine[] = [];
  private readonly runs = new Map<string, Run | null>();
  private previous: number | null = null;
  private readonly step: number;

  constructor(private readonly start: number, private readonly end: number, private readonly interval: number, private readonly config: QcConfig) {
    this.step = interval * 1000;
    this.observedByDay = new Int32Array(Math.ceil((end - start) / day));
    this.fields = qcStreams.flatMap((s, index) => (config.streams[s.stream] ? [index] : []));
    for (const index of this.fields) this.flagsByDay.set(qcStreams[index]!.stream, new Int32Array(this.observedByDay.length * flagOrder.length));
  }

  /** Per day of the range: readings, and per metric readings by flag (every reading of a metric without tests not evaluated). */
  get daily(): { observed: number; flags: Record<string, FlagCounts> }[] {
    return [...this.observedByDay].map((observed, d) => ({
      observed,
      flags: Object.fromEntries(qcStreams.map(({ stream }) => {
        const counts = this.flagsByDay.get(stream);
        return [stream, Object.fromEntries(flagOrder.map((flag, f) => [
          flagNames[flag]!, counts ? counts[d * flagOrder.length + f]! : flag === qcFlag.notEvaluated ? observed : 0,
        ])) as FlagCounts];
      })),
    }));
  }

  add(batch: FlaggedBatch): void {
    const { times } = batch;
    const n = times.length;
    this.observed += n;
    const days = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const t = times[i]!;
      // Missing readings: from the range's start to the first reading, then between two readings.
      if (this.previous === null) this.gap(this.start, Math.round((t - this.start) / this.step));
      else if (t - this.previous > 3.5 * this.step) this.gap(this.previous + this.step, Math.round((t - this.previous) / this.step) - 1);
      this.previous = t;
      const d = Math.floor((t - this.start) / day);
      days[i] = d;
      this.observedByDay[d]!++;
    }
    const width = flagOrder.length;
    this.fields.forEach((index, at) => {
      const { stream } = qcStreams[index]!;
      const counts = this.flagsByDay.get(stream)!;
      const { aggregate, tests } = batch.flags[at]!;
      for (let i = 0; i < n; i++) counts[days[i]! * width + flagIndex[aggregate[i]!]!]!++;
      const spike = tests.spike_test;
      if (spike) {
        let spikes = 0;
        for (let i = 0; i < n; i++) if (spike[i] === qcFlag.suspect || spike[i] === qcFlag.fail) spikes++;
        this.spikes[stream] = (this.spikes[stream] ?? 0) + spikes;
      }
      const flat = this.config.streams[stream]?.qartod.flat_line_test;
      if (flat) this.flat(stream, batch.values[at]!, times, flat.tolerance ?? 0, flat.suspect_threshold);
    });
  }

  /** The gaps, with the one after the last reading (or the whole range without readings). */
  finishGaps(): Gap[] {
    if (this.previous === null) this.gap(this.start, expectedIn(this.end - this.start, this.interval));
    else this.gap(this.previous + this.step, expectedIn(this.end - this.previous, this.interval) - 1);
    return this.gaps;
  }

  finishFlatLines(): FlatLine[] {
    for (const [stream, run] of this.runs) this.closeRun(stream, run);
    const order = Object.keys(this.config.streams);
    return this.flatLines.sort((a, b) => order.indexOf(a.metric) - order.indexOf(b.metric) || a.start.localeCompare(b.start));
  }

  private gap(first: number, missing: number): void {
    if (missing > 3) this.gaps.push({ start: iso(first), end: iso(first + (missing - 1) * this.step), missing });
  }

  /**
   * Runs of consecutive readings whose values (missing ones left out) stay within `tolerance`, taken from
   * the first reading on; those lasting at least `threshold` seconds are flat-line episodes.
   */
  private flat(stream: string, values: Float64Array, times: Float64Array, tolerance: number, threshold: number): void {
    const run = this.runs.get(stream) ?? null;
    if (!run && values.length === 0) return;
    // The run in locals while the readings pass, written back where it ends and after the last.
    let open = run !== null;
    let { first, last, readings, min, max, value } = run ?? { first: 0, last: 0, readings: 0, min: 0, max: 0, value: 0 };
    for (let i = 0; i < values.length; i++) {
      const x = values[i]!;
      if (x !== x) continue;
      if (open) {
        const low = x < min ? x : min;
        const high = x > max ? x : max;
        if (high - low < tolerance) {
          min = low;
          max = high;
          last = times[i]!;
          readings++;
          continue;
        }
        if ((last - first) / 1000 >= threshold) this.closeRun(stream, { first, last, readings, min, max, value }, threshold);
      }
      open = true;
      first = last = times[i]!;
      readings = 1;
      min = max = value = x;
    }
    this.runs.set(stream, open ? { first, last, readings, min, max, value } : null);
  }

  private closeRun(stream: string, run: Run | null, threshold = this.config.streams[stream]?.qartod.flat_line_test?.suspect_threshold ?? Infinity): void {
    if (run && (run.last - run.first) / 1000 >= threshold) {
      this.flatLines.push({ metric: stream, start: iso(run.first), end: iso(run.last), readings: run.readings, value: run.value });
    }
  }
}
