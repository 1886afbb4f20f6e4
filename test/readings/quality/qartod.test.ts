import assert from 'node:assert/strict';
import { aggregateFlags, flatLine, grossRange, medianInterval, rateOfChange, spike, timeGap } from '../../../src/readings/core/qc/qartod.js';

// Expected flags written by hand from ioos_qc's definitions (ioos_qc/qartod.py), not from this code.
const f64 = (values: (number | null)[]) => Float64Array.from(values, (v) => v ?? NaN);
const minutes = (values: number[]) => Float64Array.from(values, (m) => m * 60_000);
const flags = (array: Uint8Array) => [...array];

describe('the QARTOD tests, as ioos_qc defines them', () => {
  it('gross range: fail outside fail_span, suspect outside suspect_span, missing where there is no value', () => {
    // ioos_qc's docstring example.
    assert.deepEqual(flags(grossRange(f64([1, 2, 3, 4, 8]), { fail_span: [0, 5], suspect_span: [1, 4] })), [1, 1, 1, 1, 4]);
    assert.deepEqual(flags(grossRange(f64([0.5, null, 4.5, -1, 5]), { fail_span: [5, 0], suspect_span: [1, 4] })), [3, 9, 3, 4, 3]);
    assert.deepEqual(flags(grossRange(f64([-1, 6, 2]), { fail_span: [0, 5] })), [4, 4, 1]);
  });

  it('spike: the distance from the neighbours\' mean, ends and missing neighbours not evaluated', () => {
    // |x - (prev + next) / 2|: 3.75, 7.75, 4, 0; the ends are not evaluated.
    assert.deepEqual(flags(spike(f64([11.5, 12, 20, 12.5, 13, 13.5]), { suspect_threshold: 2, fail_threshold: 5 })), [2, 3, 4, 3, 1, 2]);
    // Exactly at a threshold is not over it (>); a threshold of 0 is not applied.
    assert.deepEqual(flags(spike(f64([0, 2, 0]), { suspect_threshold: 2, fail_threshold: 5 })), [2, 1, 2]);
    assert.deepEqual(flags(spike(f64([0, 9, 0]), { suspect_threshold: 0, fail_threshold: 5 })), [2, 4, 2]);
    assert.deepEqual(flags(spike(f64([0, 3, 0]), { suspect_threshold: 2, fail_threshold: 0 })), [2, 3, 2]);
    // A missing value is missing; its neighbours are not evaluated.
    assert.deepEqual(flags(spike(f64([1, 1, null, 1, 1]), { suspect_threshold: 2 })), [2, 2, 9, 2, 2]);
    assert.deepEqual(flags(spike(f64([null]), { suspect_threshold: 2 })), [9]);
    assert.deepEqual(flags(spike(f64([5, 1]), { suspect_threshold: 2 })), [2, 2]);
  });

  it('rate of change: per second over whole seconds, the first passing, after a missing value passing', () => {
    const times = Float64Array.from([0, 60_000, 120_000, 180_000, 240_000, 300_000]);
    // Changes of 0, 7, 3.5, missing and from missing over 60 s; exactly at a threshold is not over it.
    assert.deepEqual(flags(rateOfChange(f64([10, 10, 17, 20.5, null, 27]), times, { threshold: 0.05, fail_threshold: 0.1 })), [1, 1, 4, 3, 9, 1]);
    // 3.05 over 60.999 s is taken over 60 s.
    assert.deepEqual(flags(rateOfChange(f64([10, 13.05]), Float64Array.from([0, 60_999]), { threshold: 0.05 })), [1, 3]);
    assert.deepEqual(flags(rateOfChange(f64([10, 16, 19.1]), times.subarray(0, 3), { threshold: 0.05 })), [1, 3, 3]);
    assert.deepEqual(flags(rateOfChange(f64([10, 13]), Float64Array.from([0, 60_000]), { threshold: 0.05 })), [1, 1]);
    // Under a whole second apart, Δt is 0 s and ioos_qc compares the change itself: 0.3 and 0.02 here.
    const close = Float64Array.from([0, 60_000, 60_400, 60_999]);
    assert.deepEqual(flags(rateOfChange(f64([1, 1, 1.3, 1.32]), close, { threshold: 0.01, fail_threshold: 0.5 })), [1, 1, 3, 3]);
    assert.deepEqual(flags(rateOfChange(f64([1, 1, 1, 1]), close, { threshold: 0.01 })), [1, 1, 1, 1]);
    assert.deepEqual(flags(rateOfChange(f64([1, 1, 2, null]), close, { threshold: 0.01, fail_threshold: 0.5 })), [1, 1, 4, 9]);
  });

  it('flat line: windows of count + 1 readings within the tolerance, count from the median spacing', () => {
    const times = minutes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    const values = f64([1, 2, 5, 5, 5, 5.005, 5, 5, 5, 6, 6]);
    // 120 s / 60 s: windows of 3 readings; 240 s: of 5.
    const args = { suspect_threshold: 120, fail_threshold: 240, tolerance: 0.01 };
    assert.deepEqual(flags(flatLine(values, times, args)), [1, 1, 1, 1, 3, 3, 4, 4, 4, 1, 1]);
    // Missing values are left out of a window and flagged missing.
    assert.deepEqual(flags(flatLine(f64([5, 5, null, 5, 6]), minutes([0, 1, 2, 3, 4]), { suspect_threshold: 120, fail_threshold: 600, tolerance: 0.01 })), [1, 1, 9, 3, 1]);
    // A tolerance of 0 (ioos_qc's default) flags nothing; fewer than three readings all pass, missing too.
    assert.deepEqual(flags(flatLine(f64([5, 5, 5, 5]), minutes([0, 1, 2, 3]), { suspect_threshold: 60, fail_threshold: 120 })), [1, 1, 1, 1]);
    assert.deepEqual(flags(flatLine(f64([5, null]), minutes([0, 1]), args)), [1, 1]);
    // The spacing is the median, in whole seconds: 90 s here (of 60, 90, 90.5, 120), so 200 s is 2 steps.
    assert.equal(medianInterval(Float64Array.from([0, 60_000, 180_000, 270_000, 360_500])), 90);
    assert.equal(medianInterval(Float64Array.from([0, 60_000, 180_000])), 90);
    assert.deepEqual(flags(flatLine(f64([7, 7, 7, 7, 7]), Float64Array.from([0, 60_000, 180_000, 270_000, 360_500]), { suspect_threshold: 200, fail_threshold: 1000, tolerance: 0.5 })), [1, 1, 3, 3, 3]);
  });

  it('time gap: fail after more than fail_span hours, the first reading taking the second\'s flag', () => {
    assert.deepEqual(flags(timeGap(minutes([0, 1, 40, 41, 71, 72]), { fail_span: 0.5 })), [1, 1, 4, 1, 1, 1]);
    assert.deepEqual(flags(timeGap(minutes([0, 31, 32]), { fail_span: 0.5 })), [4, 4, 1]);
    // Two hours when not given.
    assert.deepEqual(flags(timeGap(minutes([0, 121, 122]), {})), [4, 4, 1]);
  });

  it('aggregates by precedence: missing, not evaluated, pass, suspect, fail', () => {
    const tests = [Uint8Array.from([9, 9, 1, 2, 1, 9]), Uint8Array.from([2, 1, 3, 2, 4, 9])];
    assert.deepEqual(flags(aggregateFlags(tests, 6)), [2, 1, 3, 2, 4, 9]);
    assert.deepEqual(flags(aggregateFlags([], 2)), [2, 2]);
  });
});
