import type { QcTest, StreamTests } from './config.js';
import { flatLine, grossRange, rateOfChange, spike, timeGap, type SeriesFacts } from './qartod.js';

/**
 * Each configured test's flags over one metric's whole series at once, in qcTests' order: the reference
 * the flags envmon serves (flagger.ts, reading by reading) are held to. `facts` are those of a longer
 * series when `values` are part of one.
 */
export function runTests(tests: StreamTests, values: Float64Array, times: Float64Array, facts?: SeriesFacts): Partial<Record<QcTest, Uint8Array>> {
  const out: Partial<Record<QcTest, Uint8Array>> = {};
  if (tests.gross_range_test) out.gross_range_test = grossRange(values, tests.gross_range_test);
  if (tests.spike_test) out.spike_test = spike(values, tests.spike_test);
  if (tests.rate_of_change_test) out.rate_of_change_test = rateOfChange(values, times, tests.rate_of_change_test);
  if (tests.flat_line_test) out.flat_line_test = flatLine(values, times, tests.flat_line_test, facts);
  if (tests.time_gap_test) out.time_gap_test = timeGap(times, tests.time_gap_test);
  return out;
}
