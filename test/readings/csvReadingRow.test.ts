import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BatchEncoder } from '../../src/readings/batchEncoder.js';
import { csvBatch, parsedCsvBatch } from '../../src/readings/csvBatch.js';
import { csvColumns, writeCsvReading } from '../../src/readings/csvReadingRow.js';
import { CopyRows } from '../../src/readings/copyRows.js';
import type { PostedBatch } from '../../src/readings/ingestBody.js';
import { rowValues } from '../helpers/copyRows.js';
import { csvBody } from '../helpers/csvTexts.js';

const runs = Number(process.env.FUZZ_RUNS ?? 600);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_126);

const station = 'st-1';
const latestMs = Date.parse('2030-06-01T00:00:00Z');

type Outcome = { count: number; outcomes: string[]; rows: CopyRows };

/** Every reading of a batch encoded: its row or its error, in order. */
function encodeAll(parse: () => PostedBatch): Outcome | { refused: string } {
  let batch: PostedBatch;
  try {
    batch = parse();
  } catch (error) {
    return { refused: (error as Error).message };
  }
  const encoder = new BatchEncoder(station, latestMs);
  const outcomes: string[] = [];
  for (let i = 0; i < batch.count; i++) {
    try {
      batch.encode(encoder, i);
      outcomes.push('ok');
    } catch (error) {
      outcomes.push((error as Error).message);
    }
  }
  return { count: batch.count, outcomes, rows: encoder.rows };
}

describe('CSV rows read in place from the request bytes', () => {
  it(`store what papaparse and the rules engine store, row for row and error for error (${runs} bodies, FUZZ_SEED=${seed})`, () => {
    let taken = 0;
    let total = 0;
    fc.assert(
      fc.property(csvBody, (text) => {
        const bytes = Buffer.from(text);
        const inPlace = encodeAll(() => csvBatch(bytes));
        const parsed = encodeAll(() => parsedCsvBatch(text));
        if ('refused' in parsed || 'refused' in inPlace) {
          assert.deepEqual(inPlace, parsed, text);
          return;
        }
        assert.equal(inPlace.count, parsed.count, text);
        assert.deepEqual(inPlace.outcomes, parsed.outcomes, text);
        assert.equal(inPlace.rows.count, parsed.rows.count, text);
        for (let i = 0; i < parsed.rows.count; i++) {
          assert.deepStrictEqual(rowValues(inPlace.rows, i), rowValues(parsed.rows, i), text);
          assert.equal(inPlace.rows.times[i], parsed.rows.times[i], text);
        }
        assert.ok(inPlace.rows.bytes(0, inPlace.rows.count).equals(parsed.rows.bytes(0, parsed.rows.count)), text);
        // How many rows the in-place writer takes by itself.
        const lines = text.split(/\r?\n/).filter((line) => line !== '');
        const columns = csvColumns(lines[0]!.split(',').map((name) => name.trim()));
        for (const line of lines.slice(1)) {
          const row = Buffer.from(line);
          total++;
          if (writeCsvReading(columns, row, 0, row.length, new CopyRows(), Buffer.from(station), latestMs)) taken++;
        }
      }),
      { numRuns: runs, seed },
    );
    // Neither path may go unexercised: the comparison above must have something to compare.
    assert.ok(taken > total * 0.05 && taken < total * 0.95, `${taken} of ${total} rows taken in place`);
    console.log(`      ${taken} of ${total} rows taken in place`);
  });

  it('takes a station\'s usual row in place, its channels as module_data', () => {
    const columns = csvColumns(['timestamp', 'temperature_c', 'humidity_rh', 'co2_ppm', 'firmware_version', 'soil_temp', 'soil_moist', 'quality_flag']);
    const row = Buffer.from('2026-05-01T00:00:00Z,21.5,40,,1.4.2,18.5,31,invalid');
    const rows = new CopyRows();
    assert.equal(writeCsvReading(columns, row, 0, row.length, rows, Buffer.from(station), latestMs), true);
    assert.deepStrictEqual(rowValues(rows, 0), [
      'st-1', '2026-05-01T00:00:00.000Z', 21.5, 40, null, null, null, null, null, null, null, null, 'ok', '1.4.2',
      '{"soil_temp":18.5,"soil_moist":31}',
    ]);
  });

  it('leaves bodies with quotes, a lone CR or mixed line breaks to papaparse, with the same outcome', () => {
    const bodiesOfNote = [
      'timestamp,temperature_c\r\n2026-05-01T00:00:00Z,1\n2026-05-01T00:01:00Z,2\r\n',
      'timestamp,temperature_c\n2026-05-01T00:00:00Z,1\r\n2026-05-01T00:01:00Z,2\n',
      'timestamp,temperature_c\r2026-05-01T00:00:00Z,1\r2026-05-01T00:01:00Z,2\r',
      'timestamp,firmware_version\n2026-05-01T00:00:00Z,"a, b"\n',
      'timestamp,temperature_c\r\n2026-05-01T00:00:00Z,1\r',
    ];
    for (const text of bodiesOfNote) {
      const inPlace = encodeAll(() => csvBatch(Buffer.from(text)));
      const parsed = encodeAll(() => parsedCsvBatch(text));
      assert.ok(!('refused' in inPlace) && !('refused' in parsed), text);
      assert.deepEqual(inPlace.outcomes, parsed.outcomes, JSON.stringify(text));
      assert.ok(inPlace.rows.bytes(0, inPlace.rows.count).equals(parsed.rows.bytes(0, parsed.rows.count)), JSON.stringify(text));
    }
  });
});
