import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parsedRows, plainRows } from '../../../src/readings/ingest/csv.js';
import { csvBody } from '../../helpers/csvTexts.js';

const runs = Number(process.env.FUZZ_RUNS ?? 500);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_128);

// A body with no quote, its line breaks any mix of CRLF, LF and CR, blank lines between rows, and now and
// then bytes that are not UTF-8.
const plainBody = fc
  .tuple(csvBody, fc.array(fc.constantFrom('\r\n', '\n', '\r', '\n\n', '\r\n\r\n'), { minLength: 1, maxLength: 8 }), fc.option(fc.nat(), { freq: 4 }))
  .map(([text, breaks, badAt]) => {
    let i = 0;
    const mixed = text.replace(/\r\n|\n/g, () => breaks[i++ % breaks.length]!);
    const bytes = Buffer.from(mixed.replace(/"/g, ''));
    if (badAt === null || bytes.length === 0) return bytes;
    const at = badAt % bytes.length;
    return Buffer.concat([bytes.subarray(0, at), Buffer.from([0xff, 0xc3]), bytes.subarray(at)]);
  });

describe('the CSV split of a body with no quote', () => {
  it(`gives the rows csv-parse gives, field for field (${runs} bodies, FUZZ_SEED=${seed})`, () => {
    fc.assert(
      fc.property(plainBody, (bytes) => {
        assert.deepEqual(plainRows(bytes), parsedRows(bytes));
      }),
      { numRuns: runs, seed },
    );
  });
});
