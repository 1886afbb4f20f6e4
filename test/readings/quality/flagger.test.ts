import assert from 'node:assert/strict';
import { qcStreams, type QcConfig, type StreamTests } from '../../../src/readings/core/qc/config.js';
import { lookBack, SeriesFlagger } from '../../../src/readings/core/qc/flagger.js';
import { aggregateFlags, medianInterval } from '../../../src/readings/core/qc/qartod.js';
import { runTests } from '../../../src/readings/core/qc/reference.js';
import { seeded } from '../../helpers/readings.js';

// The flags envmon serves are computed reading by reading along a read (flagger.ts); the reference is
// each test run over the whole series at once (qartod.ts). Any range of any series, read in batches of
// any size after the context a read takes, gets the reference's flags.
const seed = Number(process.env.FLAGGER_SEED ?? Math.floor(Math.random() * 2 ** 31));
const cases = 400;

/**
 * A series of `n` readings: mostly a minute apart, with gaps, readings under a second apart, plateaus,
 * spikes and missing values; or values in quarters, whose spans are exactly a tolerance of 0.5 or 1; or
 * long slow ramps, along which the flat-line test's queues grow while their front moves.
 */
function makeSeries(random: () => number, n: number, metrics: number): { times: Float64Array; values: Float64Array[] } {
  const shape = random();
  if (shape < 0.3) {
    const series = makeWalk(random, n, metrics);
    const step = shape < 0.15 ? 0.25 : 0.02;
    for (const values of series.values) {
      let level = 10;
      // Ramps start after a jumpy stretch, so that the queues' front has moved when they grow.
      const jumpy = Math.floor(random() * 50);
      for (let i = 0; i < n; i++) {
        if (Number.isNaN(values[i]!)) continue;
        // Quarters: a random walk of -1, 0 or +1 quarter; ramps: two hundredths a reading for an hour, then back.
        if (shape < 0.15) level += step * (Math.floor(random() * 3) - 1);
        else level += i < jumpy ? (random() - 0.5) * 4 : step * (Math.floor((i - jumpy) / 60) % 2 === 0 ? 1 : -1);
        values[i] = Math.round(level / step) * step;
      }
    }
    return series;
  }
  return makeWalk(random, n, metrics);
}

function makeWalk(random: () => number, n: number, metrics: number): { times: Float64Array; values: Float64Array[] } {
  const times = new Float64Array(n);
  const values = Array.from({ length: metrics }, () => new Float64Array(n));
  let t = 1_700_000_000_000;
  const level = Array.from({ length: metrics }, () => random() * 50);
  const flat = Array.from({ length: metrics }, () => 0);
  const ramp = Array.from({ length: metrics }, () => 0);
  for (let i = 0; i < n; i++) {
    const r = random();
    t += r < 0.8 ? 60_000 : r < 0.85 ? 400 : r < 0.9 ? 7_200_000 + Math.floor(random() * 3) * 1000 : r < 0.95 ? 30_000 : Math.floor(random() * 600_000) + 1;
    times[i] = t;
    for (let m = 0; m < metrics; m++) {
      // Plateaus, some rising or falling slowly (the flat-line test's queues then grow).
      if (flat[m]! > 0) {
        flat[m]!--;
        level[m] = level[m]! + ramp[m]!;
      } else if (random() < 0.03) {
        flat[m] = Math.floor(random() * 60);
        ramp[m] = random() < 0.5 ? 0 : (random() - 0.5) * 0.002;
      } else level[m] = level[m]! + (random() - 0.5) * [0.02, 1, 6][Math.floor(random() * 3)]!;
      const spike = random() < 0.03 ? (random() - 0.5) * 100 : 0;
      values[m]![i] = random() < 0.06 ? NaN : Math.round((level[m]! + spike + (flat[m]! > 0 && random() < 0.3 ? 0.01 : 0)) * 100000) / 100000;
    }
  }
  return { times, values };
}

/** A configuration with every test, thresholds drawn to reach edge cases (a tolerance of 0, a window of one reading, none). */
function makeTests(random: () => number): StreamTests {
  const pick = <T>(options: T[]) => options[Math.floor(random() * options.length)]!;
  return {
    ...(random() < 0.8 ? { gross_range_test: pick([{ fail_span: [-30, 80], suspect_span: [-10, 60] }, { fail_span: [80, -30] }] as const) } : {}),
    ...(random() < 0.8 ? { spike_test: pick([{ suspect_threshold: 1, fail_threshold: 10 }, { fail_threshold: 5 }, { suspect_threshold: 2, fail_threshold: null }]) } : {}),
    ...(random() < 0.8 ? { rate_of_change_test: pick([{ threshold: 0.01 }, { threshold: 0.05, fail_threshold: 0.5 }, { threshold: 1 }]) } : {}),
    ...(random() < 0.8 ? { flat_line_test: pick([
      { suspect_threshold: 180, fail_threshold: 600, tolerance: 0.05 },
      { suspect_threshold: 900, fail_threshold: 300, tolerance: 0.02 },
      { suspect_threshold: 60, fail_threshold: 59.9, tolerance: 1 },
      { suspect_threshold: 3600, fail_threshold: 7200 },
      { suspect_threshold: 30, fail_threshold: 150.7, tolerance: 0.011 },
      { suspect_threshold: 240, fail_threshold: 900, tolerance: 0.5 },
      { suspect_threshold: 1200, fail_threshold: 1440, tolerance: 0.5 },
      { suspect_threshold: 600, fail_threshold: 3000, tolerance: 1 },
    ]) } : {}),
    ...(random() < 0.8 ? { time_gap_test: pick([{ fail_span: 2 }, {}, { fail_span: 0.0166 }]) } : {}),
  };
}

describe(`the QARTOD flags along a read, against the tests over the whole series (${cases} cases, FLAGGER_SEED=${seed})`, () => {
  it('agree on every reading of any range read in batches of any size', () => {
    const random = seeded(seed);
    for (let c = 0; c < cases; c++) {
      const metrics = 1 + Math.floor(random() * 3);
      const n = [1, 2, 3, 4, 10, 60, 300][Math.floor(random() * 7)]! + Math.floor(random() * 40);
      const series = makeSeries(random, n, metrics);
      // The metrics flagged are the first of qcStreams; one of them may have no tests.
      const fields = qcStreams.slice(0, metrics).map((_, index) => index);
      const config: QcConfig = { streams: Object.fromEntries(fields.flatMap((f) => (random() < 0.15 ? [] : [[qcStreams[f]!.stream, { qartod: makeTests(random) }]]))) };
      const facts = { length: n, interval: medianInterval(series.times) };
      // The range [from, to) of the series, and the context a read takes before it.
      const from = Math.floor(random() * n);
      const to = from + Math.floor(random() * (n - from + 1));
      const before = Math.max(0, from - lookBack(config, facts.interval));
      const context = { times: series.times.slice(before, from), values: series.values.map((v) => v.slice(before, from)) };
      const flagger = new SeriesFlagger(config, fields, facts, context);
      const label = `case ${c}: ${n} readings, range ${from}..${to} (FLAGGER_SEED=${seed})`;
      for (let at = from; at < to;) {
        const size = 1 + Math.floor(random() * 25);
        const end = Math.min(to, at + size);
        // Each reading's successor given with it (as a read of several stations has them), or the next of
        // the batch, and after its last the series' next.
        const next = (column: Float64Array) => Float64Array.from({ length: end - at }, (_, k) => (at + k + 1 < n ? column[at + k + 1]! : NaN));
        const times = series.times.slice(at, end);
        const values = series.values.map((v) => v.slice(at, end));
        const flags = flagger.flag(random() < 0.5
          ? { times, values, next: { times: next(series.times), values: series.values.map(next) } }
          : { times, values, after: { time: end < n ? series.times[end]! : NaN, values: series.values.map((v) => (end < n ? v[end]! : NaN)) } });
        fields.forEach((f, m) => {
          const tests = config.streams[qcStreams[f]!.stream]?.qartod;
          const expected = tests ? runTests(tests, series.values[m]!, series.times) : {};
          const aggregate = tests ? aggregateFlags(Object.values(expected), n) : new Uint8Array(n).fill(2);
          for (const [test, reference] of Object.entries(expected)) {
            assert.deepEqual([...flags[m]!.tests[test as keyof typeof expected]!], [...reference.subarray(at, end)], `${label}: ${test} of metric ${m} at ${at}..${end}`);
          }
          assert.deepEqual(Object.keys(flags[m]!.tests), Object.keys(expected), `${label}: tests of metric ${m}`);
          assert.deepEqual([...flags[m]!.aggregate], [...aggregate.subarray(at, end)], `${label}: aggregate of metric ${m} at ${at}..${end}`);
        });
        at = end;
      }
    }
  });
});
