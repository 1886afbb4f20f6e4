import { qcStreams, qcTests, type QcConfig, type QcTest, type StreamTests } from './config.js';
import { aggregateFlags, qcFlag, type SeriesFacts } from './qartod.js';

/**
 * Consecutive readings of one station's series, in time order, and the reading after each in the whole
 * series, which is what a reading's flags depend on beyond the readings before it: either given for each
 * (`next`: a read of several stations, whose rows carry it), or the batch's next reading and, after its
 * last, `after`.
 */
export type ReadingBatch = {
  /** Milliseconds since 1970. */
  times: Float64Array;
  /** Per metric flagged (in the flagger's order): each reading's value, NaN where it has none. */
  values: Float64Array[];
} & ({ next: Successors; after?: undefined } | { next?: undefined; after: Successor });

/** Each reading's successor: its time (NaN after the series' last reading), and per metric flagged its value (NaN where none). */
export type Successors = { times: Float64Array; values: Float64Array[] };
/** The reading after a batch: its time (NaN: none, the batch ends the series) and per metric flagged its value. */
export type Successor = { time: number; values: ArrayLike<number> };

/** Which tests' own flags a read keeps beside the aggregate: all of them, or those named. */
export type KeptTests = 'all' | readonly QcTest[];

/** One metric's flags over a batch: each test's (those kept), and their aggregate by QARTOD's precedence. */
export type MetricFlags = { tests: Partial<Record<QcTest, Uint8Array>>; aggregate: Uint8Array };

/** The readings before the first to be flagged, oldest first: as many as the flat-line test looks back over, fewer at the series' start. */
export type SeriesContext = { times: Float64Array; values: Float64Array[] };

/**
 * How many readings before a reading the flat-line test looks at, at most, for this configuration and
 * the series' median spacing (at least one: the rate of change, the spike and the time gap look at the
 * reading before).
 */
export function lookBack(config: QcConfig, interval: number): number {
  let most = 1;
  for (const { qartod } of Object.values(config.streams)) {
    const flat = qartod.flat_line_test;
    if (!flat || !(interval > 0)) continue;
    for (const threshold of [flat.suspect_threshold, flat.fail_threshold]) most = Math.max(most, windowCount(threshold, interval));
  }
  return most;
}

/** ioos_qc's count of readings a flat-line threshold in seconds spans, over the median spacing: int(threshold) / interval, truncated. */
const windowCount = (threshold: number, interval: number) => Math.trunc(Math.trunc(threshold) / interval);

/**
 * The QARTOD flags of one station's series, reading by reading in time order, as the tests of
 * qartod.ts give them over the whole series at once: each test looks only at the reading before (kept
 * here), the reading after (given with each reading) and, for the flat line, the readings of a window
 * reaching back (a stretch kept here), beside two facts of the whole series (its length and median
 * spacing). So a read of any range flags its readings in one pass over them, with memory for one batch,
 * on the same snapshot as the rows it answers with. The differential test holds it to qartod.ts.
 */
export class SeriesFlagger {
  private readonly metrics: MetricState[];
  private previousTime = NaN;
  /** The position in the series of the next reading to flag (from the first reading read, which the context starts with). */
  private position = 0;

  /**
   * `fields` are the metrics to flag, as indexes into qcStreams; `context` the readings before the first
   * to flag (values in `fields`' order).
   */
  constructor(config: QcConfig, readonly fields: readonly number[], facts: SeriesFacts, context: SeriesContext) {
    this.metrics = fields.map((index) => new MetricState(config.streams[qcStreams[index]!.stream]?.qartod, facts));
    const n = context.times.length;
    for (let i = 0; i < n; i++) {
      for (let m = 0; m < this.metrics.length; m++) this.metrics[m]!.follow(context.values[m]![i]!, this.position);
      this.previousTime = context.times[i]!;
      this.position++;
    }
  }

  /** The flags of the next readings of the series, per metric in `fields`' order: the aggregate, and the tests' own in `kept`. */
  flag(batch: ReadingBatch, kept: KeptTests = 'all'): MetricFlags[] {
    const n = batch.times.length;
    const gaps = this.timeGaps(batch);
    const flags = this.metrics.map((metric, m) => metric.flag(batch, m, this.position, this.previousTime, gaps, kept));
    this.position += n;
    if (n > 0) this.previousTime = batch.times[n - 1]!;
    return flags;
  }

  /** The time-gap test's verdict per reading and fail span: whether the reading follows a gap longer than it. */
  private timeGaps(batch: ReadingBatch): (spanMs: number) => Uint8Array {
    const n = batch.times.length;
    const bySpan = new Map<number, Uint8Array>();
    return (spanMs) => {
      let flags = bySpan.get(spanMs);
      if (flags) return flags;
      flags = new Uint8Array(n);
      let before = this.previousTime;
      for (let i = 0; i < n; i++) {
        const t = batch.times[i]!;
        // The series' first reading takes the second's flag (a single reading passes).
        const gap = Number.isNaN(before) ? nextTime(batch, i) - t : t - before;
        flags[i] = gap > spanMs ? qcFlag.fail : qcFlag.pass;
        before = t;
      }
      bySpan.set(spanMs, flags);
      return flags;
    };
  }
}

/** The time of the reading after reading `i` of a batch. */
const nextTime = (batch: ReadingBatch, i: number) => (batch.next ? batch.next.times[i]! : i + 1 < batch.times.length ? batch.times[i + 1]! : batch.after.time);

/** What one metric's tests keep between readings: the value before, and the flat-line test's stretch. */
class MetricState {
  private previous = NaN;
  /** None where the flat-line test flags nothing: not configured, or a series of fewer than three readings (which passes whole). */
  private readonly stretch: FlatStretch | null;
  /** The readings each flat-line threshold's window reaches back over; -1 where it spans none (no median spacing). */
  private readonly suspectCount: number;
  private readonly failCount: number;

  constructor(private readonly tests: StreamTests | undefined, facts: SeriesFacts) {
    const flat = tests?.flat_line_test;
    const counted = (threshold: number | undefined) => {
      const count = threshold === undefined ? NaN : windowCount(threshold, facts.interval);
      return Number.isFinite(count) && count >= 0 ? count : -1;
    };
    this.stretch = flat && facts.length >= 3 ? new FlatStretch(flat.tolerance ?? 0) : null;
    this.suspectCount = counted(flat?.suspect_threshold);
    this.failCount = counted(flat?.fail_threshold);
  }

  /** Takes a reading into the state without flagging it (a reading of the context). */
  follow(value: number, position: number): void {
    this.stretch?.push(value, position);
    this.previous = value;
  }

  /**
   * The flags of metric `m` of the batch's readings, the first at `start` in the series, after a reading
   * at `previousTime` (NaN: the batch starts the series); `gaps` gives the time-gap test's flags. One
   * loop per test over the batch's arrays, as qartod.ts runs them over a series; the tests' own flags
   * are given for those in `kept`.
   */
  flag(batch: ReadingBatch, m: number, start: number, previousTime: number, gaps: (spanMs: number) => Uint8Array, kept: KeptTests): MetricFlags {
    const n = batch.times.length;
    const values = batch.values[m]!;
    const t = this.tests;
    if (!t) return { tests: {}, aggregate: new Uint8Array(n).fill(qcFlag.notEvaluated) };
    const tests: Partial<Record<QcTest, Uint8Array>> = {};
    for (const test of qcTests) {
      if (test === 'gross_range_test' && t.gross_range_test) tests[test] = grossRange(values, t.gross_range_test);
      if (test === 'spike_test' && t.spike_test) tests[test] = spike(values, batch, m, this.previous, previousTime, t.spike_test);
      if (test === 'rate_of_change_test' && t.rate_of_change_test) tests[test] = rateOfChange(values, batch.times, this.previous, previousTime, t.rate_of_change_test);
      if (test === 'flat_line_test' && t.flat_line_test) tests[test] = this.flatLine(values, start);
      if (test === 'time_gap_test' && t.time_gap_test) tests[test] = gaps(Math.trunc((t.time_gap_test.fail_span ?? 2) * 3600) * 1000);
    }
    if (n > 0) this.previous = values[n - 1]!;
    const aggregate = aggregateFlags(Object.values(tests), n);
    if (kept !== 'all') for (const test of qcTests) if (!kept.includes(test)) delete tests[test];
    return { tests, aggregate };
  }

  /** Suspect, then fail, where the window of each threshold's readings lies within the flat stretch; missing where there is no value. */
  private flatLine(values: Float64Array, start: number): Uint8Array {
    const n = values.length;
    const flags = new Uint8Array(n).fill(qcFlag.pass);
    // A series of fewer than three readings passes whole, missing values included.
    const stretch = this.stretch;
    if (!stretch) return flags;
    const { suspectCount: suspect, failCount: fail } = this;
    for (let i = 0; i < n; i++) {
      const x = values[i]!;
      const position = start + i;
      stretch.push(x, position);
      if (x !== x) flags[i] = qcFlag.missing;
      else if (fail >= 0 && stretch.holds(position, fail)) flags[i] = qcFlag.fail;
      else if (suspect >= 0 && stretch.holds(position, suspect)) flags[i] = qcFlag.suspect;
    }
    return flags;
  }
}

/** ioos_qc's gross range test on a batch (qartod.ts). */
function grossRange(values: Float64Array, args: NonNullable<StreamTests['gross_range_test']>): Uint8Array {
  const n = values.length;
  const flags = new Uint8Array(n);
  const [failMin, failMax] = sortedSpan(args.fail_span);
  const [suspectMin, suspectMax] = args.suspect_span ? sortedSpan(args.suspect_span) : [-Infinity, Infinity];
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    flags[i] = x !== x ? qcFlag.missing : x < failMin || x > failMax ? qcFlag.fail : x < suspectMin || x > suspectMax ? qcFlag.suspect : qcFlag.pass;
  }
  return flags;
}

/**
 * ioos_qc's spike test ("average") on metric `m` of a batch, each reading between the one before (the
 * batch's first after `previous` at `previousTime`) and the one after: a missing neighbour, or none (the
 * series' ends), is not evaluated; a threshold of 0 or none is not applied.
 */
function spike(values: Float64Array, batch: ReadingBatch, m: number, previous: number, previousTime: number, args: NonNullable<StreamTests['spike_test']>): Uint8Array {
  const n = values.length;
  const flags = new Uint8Array(n);
  const fail = args.fail_threshold || Infinity;
  const suspect = args.suspect_threshold || Infinity;
  const given = batch.next;
  const nextValues = given?.values[m];
  const last = batch.after ? batch.after.values[m]! : NaN;
  const lastTime = batch.after ? batch.after.time : NaN;
  let before = previous;
  let first = previousTime !== previousTime;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    const next = nextValues ? nextValues[i]! : i + 1 < n ? values[i + 1]! : last;
    const nextTime = given ? given.times[i]! : i + 1 < n ? 0 : lastTime;
    const diff = Math.abs(x - (before + next) / 2);
    flags[i] = x !== x ? qcFlag.missing
      : first || nextTime !== nextTime || diff !== diff ? qcFlag.notEvaluated
        : diff > fail ? qcFlag.fail : diff > suspect ? qcFlag.suspect : qcFlag.pass;
    before = x;
    first = false;
  }
  return flags;
}

/**
 * ioos_qc's rate-of-change test on a batch, from the reading before (`previous` at `previousTime` for the
 * first; NaN: the series starts here, and passes). Under a whole second, ioos_qc's masked division leaves
 * the change itself (qartod.ts).
 */
function rateOfChange(values: Float64Array, times: Float64Array, previous: number, previousTime: number, args: NonNullable<StreamTests['rate_of_change_test']>): Uint8Array {
  const n = values.length;
  const flags = new Uint8Array(n);
  const fail = args.fail_threshold ?? Infinity;
  const suspect = args.threshold;
  let before = previous;
  let beforeTime = previousTime;
  for (let i = 0; i < n; i++) {
    const x = values[i]!;
    const time = times[i]!;
    if (x !== x) flags[i] = qcFlag.missing;
    else if (beforeTime !== beforeTime) flags[i] = qcFlag.pass;
    else {
      const seconds = Math.trunc((time - beforeTime) / 1000);
      const change = x - before;
      const rate = Math.abs(seconds === 0 ? change : change / seconds);
      flags[i] = rate > fail ? qcFlag.fail : rate > suspect ? qcFlag.suspect : qcFlag.pass;
    }
    before = x;
    beforeTime = time;
  }
  return flags;
}

const sortedSpan = (span: readonly [number, number]) => [Math.min(...span), Math.max(...span)] as const;

/**
 * The longest stretch of readings ending at the latest whose values (missing ones left out) span less
 * than `tolerance`, as readings arrive: where it starts. A window of readings ending at a reading spans
 * less than the tolerance exactly when it starts no earlier than that stretch, since a window's span only
 * grows as it reaches back (a window with no value at all ends at a missing reading, which is flagged
 * missing whatever the window). The stretch's minimum and maximum are kept in monotonic queues of
 * positions, each position entering once.
 */
class FlatStretch {
  private from = 0;
  // Two queues of (position, value) in rings of a power of two, doubled as needed: the stretch's minimum
  // candidates (values rising from the front) and its maximum candidates (falling).
  private minPositions: Float64Array = new Float64Array(16);
  private minValues: Float64Array = new Float64Array(16);
  private minMask = 15;
  private minHead = 0;
  private minSize = 0;
  private maxPositions: Float64Array = new Float64Array(16);
  private maxValues: Float64Array = new Float64Array(16);
  private maxMask = 15;
  private maxHead = 0;
  private maxSize = 0;

  constructor(private readonly tolerance: number) {}

  push(x: number, position: number): void {
    if (x !== x) return;
    // The value of the reading before, again (a sensor's resolution makes it common): each queue's last
    // entry moves to this reading, and the stretch's span is what it was.
    const minBack = (this.minHead + this.minSize - 1) & this.minMask;
    const maxBack = (this.maxHead + this.maxSize - 1) & this.maxMask;
    if (this.minSize > 0 && this.maxSize > 0 && this.minValues[minBack] === x && this.maxValues[maxBack] === x) {
      this.minPositions[minBack] = position;
      this.maxPositions[maxBack] = position;
      return;
    }
    // A value at least the tolerance away from the reading before (noise beyond a sensor's resolution,
    // commonly): no reading before can share a stretch with it, so the stretch starts after that one.
    if (this.minSize > 0 && Math.abs(x - this.minValues[minBack]!) >= this.tolerance && this.tolerance > 0) {
      this.from = this.minPositions[minBack]! + 1;
      this.minHead = this.maxHead = 0;
      this.minSize = this.maxSize = 1;
      this.minPositions[0] = this.maxPositions[0] = position;
      this.minValues[0] = this.maxValues[0] = x;
      return;
    }
    while (this.minSize > 0 && this.minValues[(this.minHead + this.minSize - 1) & this.minMask]! >= x) this.minSize--;
    if (this.minSize > this.minMask) this.growMins();
    let at = (this.minHead + this.minSize++) & this.minMask;
    this.minPositions[at] = position;
    this.minValues[at] = x;
    while (this.maxSize > 0 && this.maxValues[(this.maxHead + this.maxSize - 1) & this.maxMask]! <= x) this.maxSize--;
    if (this.maxSize > this.maxMask) this.growMaxs();
    at = (this.maxHead + this.maxSize++) & this.maxMask;
    this.maxPositions[at] = position;
    this.maxValues[at] = x;
    // Not `>= tolerance` (a NaN tolerance would reach no reading): the stretch starts after the reading that leaves first.
    while (!(Math.abs(this.maxValues[this.maxHead]! - this.minValues[this.minHead]!) < this.tolerance)) {
      const from = Math.min(this.minPositions[this.minHead]!, this.maxPositions[this.maxHead]!) + 1;
      this.from = from;
      while (this.minSize > 0 && this.minPositions[this.minHead]! < from) {
        this.minHead = (this.minHead + 1) & this.minMask;
        this.minSize--;
      }
      while (this.maxSize > 0 && this.maxPositions[this.maxHead]! < from) {
        this.maxHead = (this.maxHead + 1) & this.maxMask;
        this.maxSize--;
      }
      if (this.minSize === 0) break;
    }
  }

  /** Whether the window of `count + 1` readings ending at `position` lies within the stretch. */
  holds(position: number, count: number): boolean {
    return this.from <= position - count;
  }

  private growMins(): void {
    this.minPositions = grown(this.minPositions, this.minHead, this.minSize, this.minMask);
    this.minValues = grown(this.minValues, this.minHead, this.minSize, this.minMask);
    this.minMask = this.minMask * 2 + 1;
    this.minHead = 0;
  }

  private growMaxs(): void {
    this.maxPositions = grown(this.maxPositions, this.maxHead, this.maxSize, this.maxMask);
    this.maxValues = grown(this.maxValues, this.maxHead, this.maxSize, this.maxMask);
    this.maxMask = this.maxMask * 2 + 1;
    this.maxHead = 0;
  }
}

/** A ring's `size` entries from `head` (under `mask`), copied from the front of a ring twice as large. */
function grown(ring: Float64Array, head: number, size: number, mask: number): Float64Array {
  const out = new Float64Array((mask + 1) * 2);
  for (let k = 0; k < size; k++) out[k] = ring[(head + k) & mask]!;
  return out;
}
