import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BatchEncoder } from '../../src/readings/batchEncoder.js';
import { csvBatch, parsedCsvBatch } from '../../src/readings/csvBatch.js';
import { csvColumns, writeCsvReading } from '../../src/readings/csvReadingRow.js';
import { CopyRows } from '../../src/readings/copyRows.js';
import type { PostedBatch } from '../../src/readings/ingestBody.js';
import { rowValues } from '../helpers/copyRows.js';

const runs = Number(process.env.FUZZ_RUNS ?? 600);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_126);

const station = 'st-1';
const latestMs = Date.parse('2030-06-01T00:00:00Z');

// Columns a station's CSV may have: fields, channels, the keys the service decides, and some that are
// never read in place (an alias, module_data, names JSON or objects treat apart, spaces to trim).
const columnNames = [
  'temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'co2_ppm', 'uv_index', 'altitude_m', 'firmware_version',
  'soil_temp', 'wind_dir', 'quality_flag', 'station_id', ' pm10', 'air_temp', 'module_data', '1st', '__proto__', 'ünit', 'temperature_c ',
];

const timestamps = fc.oneof(
  fc.date({ min: new Date('1890-01-01T00:00:00Z'), max: new Date('2031-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2029-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString().replace('.000Z', 'Z')),
  fc.constantFrom('2026-02-29T00:00:00Z', '2024-02-29T12:00:00Z', '2026-05-01T24:00:00Z', '2026-05-01T00:00:00+02:00', '2026-05-01 00:00', 'yesterday', '', '2026-05-01T00:00:00.5Z'),
);
const numbers = fc.oneof(
  fc.double({ min: -2e9, max: 2e9, noNaN: true, noDefaultInfinity: true }).map(String),
  fc.integer({ min: -2000, max: 2000 }).map(String),
  fc.tuple(fc.integer({ min: -999, max: 999 }), fc.integer({ min: 0, max: 9999 })).map(([i, f]) => `${i}.${f}`),
  fc.constantFrom('', '', '0', '-0', '1.50', '1e2', '-1.5E+3', '007', '-.5', '.5', ' 1.5', '1.5 ', 'NaN', 'warm', '0.000001', '0.0000001', '999999999', '1000000000', '12345678901234567', '0.1000000000000000055511151231257827', 'é'),
);
const texts = fc.oneof(
  fc.constantFrom('', '1.4.2', 'fw-9', 'NE', 'x y', 'é', '\u0001', '12.5', 'a'.repeat(101), 'a'.repeat(100)),
  fc.string({ maxLength: 12 }).map((s) => s.replace(/[",\r\n]/g, '')),
);

/** A quote-free CSV body: a header with a timestamp, rows of fields in the column's kind (some of the wrong count). */
const bodies = fc
  .tuple(
    fc.shuffledSubarray(columnNames, { minLength: 0, maxLength: 8 }),
    fc.nat(8),
    fc.boolean(),
    fc.boolean(),
  )
  .chain(([names, at, crlf, finalBreak]) => {
    const header = [...names.slice(0, at), 'timestamp', ...names.slice(at)];
    const field = (name: string) => (name === 'timestamp' ? timestamps : name === 'firmware_version' || name === 'wind_dir' || name === 'quality_flag' || name === 'station_id' ? texts : numbers);
    const row = fc.tuple(fc.tuple(...header.map(field)), fc.integer({ min: -12, max: 12 })).map(([fields, change]) =>
      change === -12 ? '' : change === -11 ? fields.slice(1).join(',') : change === 12 ? `${fields.join(',')},1` : fields.join(','));
    return fc.array(row, { minLength: 0, maxLength: 12 }).map((rows) => {
      const newline = crlf ? '\r\n' : '\n';
      return [header.join(','), ...rows].join(newline) + (finalBreak ? newline : '');
    });
  });

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
      fc.property(bodies, (text) => {
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
