import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BatchEncoder } from '../../src/readings/batchEncoder.js';
import { CopyRows } from '../../src/readings/copyRows.js';
import { scanJsonBatch } from '../../src/readings/jsonBatch.js';
import { JsonBytes } from '../../src/readings/jsonBytes.js';
import { writeJsonReading } from '../../src/readings/jsonReadingRow.js';
import { RowError } from '../../src/readings/readingRules.js';
import { rowValues, type RowValues } from '../helpers/copyRows.js';
import { reading } from '../helpers/readingTexts.js';

const runs = Number(process.env.FUZZ_RUNS ?? 2000);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_125);

const station = 'st-1';
// A year into the future is past the tolerance for some of the dates above.
const latestMs = Date.parse('2030-06-01T00:00:00Z');

// The only valid JSON the scanner refuses: a key holding an escape, or a __proto__ or constructor key.
const refusedKey = /"(?:[^"\\]|\\.)*\\(?:[^"\\]|\\.)*"\s*:|"(?:__proto__|constructor)"\s*:/;

/** Whether the scanner takes the reading as one value; if not, it must be invalid JSON or hold a refused key. */
function scanned(text: string): boolean {
  const end = new JsonBytes(Buffer.from(text)).value(0);
  if (end === Buffer.byteLength(text)) return true;
  let valid = true;
  try {
    JSON.parse(text);
  } catch {
    valid = false;
  }
  if (valid) assert.match(text, refusedKey, `the scanner refuses ${text}`);
  return false;
}

/** What the rules engine makes of a reading: its row, or its error. */
function byRules(text: string): { row: RowValues; ms: number } | { error: string } {
  const encoder = new BatchEncoder(station, latestMs);
  try {
    encoder.add(JSON.parse(text));
  } catch (error) {
    if (!(error instanceof RowError)) throw error;
    return { error: error.message };
  }
  return { row: rowValues(encoder.rows, 0), ms: encoder.rows.times[0]! };
}

/** Two rows store the same values: the same doubles (a negative zero is not a zero), the same text. */
function assertSameRow(inPlace: RowValues, rules: RowValues, text: string): void {
  assert.deepStrictEqual(inPlace, rules, text);
}

describe('readings read in place from the request bytes', () => {
  it(`write the line the rules engine writes, or decline and leave nothing (${runs} readings, FUZZ_SEED=${seed})`, () => {
    let taken = 0;
    let total = 0;
    fc.assert(
      fc.property(reading, (text) => {
        if (!scanned(text)) return;
        const json = new JsonBytes(Buffer.from(text));
        const rows = new CopyRows();
        const end = writeJsonReading(json, 0, rows, Buffer.from(station), latestMs);
        const rules = byRules(text);
        total++;
        if (end < 0) {
          assert.equal(rows.length, 0, `${text}: a declined reading leaves nothing`);
          assert.equal(rows.count, 0);
          return;
        }
        taken++;
        assert.equal(end, Buffer.byteLength(text), `${text}: a reading taken in place ends at its closing brace`);
        assert.ok('row' in rules, `${text}: taken in place, but the rules engine refuses it (${'error' in rules ? rules.error : ''})`);
        assert.equal(rows.count, 1);
        assert.equal(rows.times[0], rules.ms, text);
        assertSameRow(rowValues(rows, 0), rules.row, text);
      }),
      { numRuns: runs, seed },
    );
    // Neither path may go unexercised: the comparison above must have something to compare.
    assert.ok(taken > total * 0.1 && taken < total * 0.9, `${taken} of ${total} readings taken in place`);
    console.log(`      ${taken} of ${total} readings taken in place`);
  });

  it('takes a station\'s usual reading in place', () => {
    const text = '{"timestamp":"2026-05-01T00:00:00Z","temperature_c":21.5,"humidity_rh":40,"pressure_hpa":1013.25,"pm2_5":12,' +
      '"co2_ppm":null,"firmware_version":"1.4.2","soil_temp":18.5,"soil_moist":31}';
    const rows = new CopyRows();
    assert.equal(writeJsonReading(new JsonBytes(Buffer.from(text)), 0, rows, Buffer.from(station), latestMs), text.length);
    assert.deepStrictEqual(rowValues(rows, 0), [
      'st-1', '2026-05-01T00:00:00.000Z', 21.5, 40, 1013.25, null, null, 12, null, null, null, null, 'ok', '1.4.2',
      '{"soil_temp":18.5,"soil_moist":31}',
    ]);
  });

  it('adds the same lines and the same errors through addJson as through add', () => {
    fc.assert(
      fc.property(fc.array(reading.filter(scanned), { minLength: 1, maxLength: 20 }), (texts) => {
        const bytes = Buffer.from(`[${texts.join(',')}]`);
        const json = new JsonBytes(bytes);
        const byBytes = new BatchEncoder(station, latestMs);
        const byObjects = new BatchEncoder(station, latestMs);
        let at = 1;
        for (const text of texts) {
          const outcome = (encoder: BatchEncoder, add: () => void) => {
            try {
              add();
              return 'ok';
            } catch (error) {
              return (error as Error).message;
            }
          };
          const a = outcome(byBytes, () => byBytes.addJson(json, at, at + Buffer.byteLength(text)));
          const b = outcome(byObjects, () => byObjects.add(JSON.parse(text)));
          assert.equal(a, b, text);
          at += Buffer.byteLength(text) + 1;
        }
        assert.equal(byBytes.rows.count, byObjects.rows.count);
        for (let i = 0; i < byBytes.rows.count; i++) assertSameRow(rowValues(byBytes.rows, i), rowValues(byObjects.rows, i), texts.join('\n'));
        assert.ok(byBytes.rows.bytes(0, byBytes.rows.count).equals(byObjects.rows.bytes(0, byObjects.rows.count)), texts.join('\n'));
      }),
      { numRuns: 200, seed },
    );
  });
});

describe('the JSON envelope read in place', () => {
  const batch = (readings: string, extra = '') => Buffer.from(`{"station_id":"st-1",${extra}"readings":[${readings}]}`);

  it('finds each reading of a usual batch, whatever the spacing and the other keys', () => {
    const body = Buffer.from(' {\n "v": [1, {"a": null}],\t"station_id" : "st-1", "readings" : [ {"timestamp":"2026-01-01T00:00:00Z"} ,{ } ] }\r\n');
    const scanned = scanJsonBatch(body)!;
    assert.equal(scanned.stationId, 'st-1');
    assert.deepEqual(scanned.starts.map((s, i) => JSON.parse(body.toString('utf8', s, scanned.ends[i]))), [{ timestamp: '2026-01-01T00:00:00Z' }, {}]);
  });

  it('hands every unusual or invalid body to the general parser', () => {
    const unusual = [
      batch('{"a":1,"__proto__":{"x":1}}'),
      batch('{"module_data":{"\\u005f_proto__":1}}'),
      batch('1', '"__proto__":2,'),
      batch('{"constructor":{"prototype":{}}}'),
      batch('1', '"station_id":"st-2",'),
      batch(''),
      batch('1,'),
      batch('01'),
      batch('"\u0001"'),
      batch(`${'['.repeat(70)}${']'.repeat(70)}`),
      Buffer.from('{"station_id":"st\\u002d1","readings":[1]}'),
      Buffer.from('{"station_id":"not a station","readings":[1]}'),
      Buffer.from('{"station_id":"st-1","readings":[1]} x'),
      Buffer.from('\uFEFF{"station_id":"st-1","readings":[1]}'),
      Buffer.from('[{"station_id":"st-1","readings":[1]}]'),
      Buffer.from('{"readings":[1]}'),
      Buffer.from(''),
    ];
    for (const body of unusual) assert.equal(scanJsonBatch(body), null, body.toString().slice(0, 80));
  });
});
