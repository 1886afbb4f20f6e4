import assert from 'node:assert/strict';
import fc from 'fast-check';
import { arrivingReadings, type Progress } from '../../src/readings/arrivingReadings.js';
import { BatchIntake } from '../../src/readings/batchIntake.js';
import { parseIngestBody, type IngestFormat, type PostedBatch } from '../../src/readings/ingestBody.js';
import { csvBody } from '../helpers/csvTexts.js';
import { reading } from '../helpers/readingTexts.js';

const runs = Number(process.env.FUZZ_RUNS ?? 500);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_125);
const station = 'st-1';
const latestMs = Date.parse('2030-06-01T00:00:00Z');

const space = fc.constantFrom('', '', ' ', '\n', '\r\n  ', '\t');
const marks = fc.constantFrom('', '', '', '\uFEFF', '\uFEFF\uFEFF');

/** A JSON batch: mostly the plain envelope, sometimes with what only the whole-body parser takes or refuses. */
const jsonBody = fc
  .record({
    readings: fc.array(reading, { maxLength: 12 }),
    stationFirst: fc.boolean(),
    station: fc.constantFrom('"st-1"', '"st-1"', '"st-1"', '"st-2"', '"st\\u002d1"', '"not a station"', '1'),
    extra: fc.constantFrom('', '', '', '', '"note": [1, {"a": null}], ', '"readings": [], ', '"__proto__": 1, '),
    after: fc.constantFrom('', '', '', ' x', ']', '\n'),
    marks,
    s1: space,
    s2: space,
  })
  .map(({ readings, stationFirst, station: id, extra, after, marks: m, s1, s2 }) => {
    const members = [`"station_id"${s1}:${s2}${id}`, `"readings"${s2}:${s1}[${s1}${readings.join(`,${s2}`)}${s2}]`];
    if (!stationFirst) members.reverse();
    return `${m}${s1}{${s2}${extra}${members.join(`${s1},${s2}`)}${s1}}${after}`;
  });

/** An NDJSON batch: a reading a line, with blank lines, CRLF, lines that are not JSON and readings with more on their line. */
const ndjsonBody = fc
  .record({
    lines: fc.array(fc.oneof(
      { weight: 8, arbitrary: reading },
      fc.constantFrom('', '  ', '{"timestamp": ', 'not json', '[1]'),
      // A reading with more on its line: another one, or anything else.
      fc.tuple(reading, fc.oneof(reading, fc.constantFrom(' x', ' 1', ', ', ' {'))).map(([first, more]) => `${first}${more}`),
    ), { maxLength: 12 }),
    newline: fc.constantFrom('\n', '\r\n'),
    last: fc.boolean(),
    marks,
  })
  .map(({ lines, newline, last, marks: m }) => `${m}${lines.join(newline)}${last ? newline : ''}`);

/**
 * A CSV batch: mostly a quote-free body with one kind of line break, sometimes with what only the
 * whole-body parser reads (a quoted field, a stray CR, a bare LF among CRLFs) somewhere in it.
 */
const csvArriving = fc
  .record({ text: csvBody, marks, spoil: fc.constantFrom('', '', '', '"a, b"', '\r', '\n'), at: fc.nat() })
  .map(({ text, marks: m, spoil, at }) => {
    if (spoil === '') return `${m}${text}`;
    const place = at % (text.length + 1);
    return `${m}${text.slice(0, place)}${spoil}${text.slice(place)}`;
  });

const body = fc.oneof(
  jsonBody.map((text) => ({ format: 'json' as IngestFormat, text })),
  ndjsonBody.map((text) => ({ format: 'ndjson' as IngestFormat, text })),
  csvArriving.map((text) => ({ format: 'csv' as IngestFormat, text })),
);

/** The readings of `bytes` taken as they arrive in pieces ending at `cuts`, a few at a time. */
function takeArriving(bytes: Buffer, format: IngestFormat, cuts: number[]) {
  const intake = new BatchIntake(station, latestMs);
  const readings = arrivingReadings(format);
  const ends = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b).filter((c) => c < bytes.length);
  let outcome: Progress | 'syntax' = 'more';
  for (const end of [...ends, bytes.length]) {
    const complete = end === bytes.length;
    do {
      try {
        outcome = readings.advance(bytes.subarray(0, end), complete, intake, intake.count + 3);
      } catch (error) {
        if (!(error instanceof SyntaxError)) throw error;
        outcome = 'syntax';
      }
    } while (outcome === 'paused');
    if (complete) assert.notEqual(outcome, 'more', 'a whole body never waits for more');
    if (outcome !== 'more') break;
  }
  return { outcome, intake, stationId: readings.stationId };
}

/** The readings of the whole body, as the whole-body path takes them; or the problem the body is. */
function takeWhole(bytes: Buffer, format: IngestFormat): { posted: PostedBatch; intake: BatchIntake } | { problem: Error } {
  let posted: PostedBatch;
  try {
    posted = parseIngestBody(bytes, format);
  } catch (error) {
    return { problem: error as Error };
  }
  const intake = new BatchIntake(station, latestMs);
  try {
    while (intake.count < posted.count) intake.take(posted.encode);
  } catch (error) {
    return { problem: error as Error };
  }
  return { posted, intake };
}

describe('a batch read as its bytes arrive', () => {
  it(`takes exactly what the whole body gives, wherever its bytes are cut, or leaves the body to the whole-body parser (${runs} bodies, FUZZ_SEED=${seed})`, () => {
    let taken = 0;
    let total = 0;
    const takenIn: Record<IngestFormat, number> = { json: 0, ndjson: 0, csv: 0 };
    fc.assert(
      fc.property(body, fc.array(fc.nat(), { maxLength: 8 }), ({ format, text }, cuts) => {
        const bytes = Buffer.from(text);
        const arriving = takeArriving(bytes, format, cuts);
        const whole = takeWhole(bytes, format);
        total++;
        if (arriving.outcome !== 'done') return;
        taken++;
        takenIn[format]++;
        assert.ok('posted' in whole, `${text}: taken as it arrived, but the whole body is refused: ${'problem' in whole ? whole.problem.message : ''}`);
        if (format === 'json') assert.equal(arriving.stationId, whole.posted.stationId, text);
        assert.equal(arriving.intake.count, whole.posted.count, text);
        assert.equal(arriving.intake.errors, whole.intake.errors, text);
        assert.deepEqual(arriving.intake.errorDetails, whole.intake.errorDetails, text);
        assert.equal(arriving.intake.rows.count, whole.intake.rows.count, text);
        assert.ok(arriving.intake.rows.bytes(0, arriving.intake.rows.count).equals(whole.intake.rows.bytes(0, whole.intake.rows.count)), text);
        assert.deepEqual(arriving.intake.rows.times, whole.intake.rows.times, text);
      }),
      { numRuns: runs, seed },
    );
    // Both outcomes must be exercised: the comparison above needs bodies to compare.
    assert.ok(taken > total * 0.3 && taken < total, `${taken} of ${total} bodies taken as they arrived`);
    for (const [format, count] of Object.entries(takenIn)) assert.ok(count > total * 0.02, `only ${count} ${format} bodies taken as they arrived`);
    console.log(`      ${taken} of ${total} bodies taken as they arrived (${Object.entries(takenIn).map(([f, n]) => `${f} ${n}`).join(', ')})`);
  });

  it('waits at a cut anywhere in a token, and refuses what only the whole-body parser may answer', () => {
    const text = '\uFEFF{"station_id": "st-1", "readings": [{"timestamp": "2026-05-01T00:00:00Z", "temperature_c": 21.5}, {"timestamp": "2026-05-01T00:01:00Z"}]}';
    const bytes = Buffer.from(text);
    for (let cut = 0; cut < bytes.length; cut++) {
      const { outcome, intake } = takeArriving(bytes, 'json', [cut]);
      assert.equal(outcome, 'done', `cut at ${cut}`);
      assert.equal(intake.rows.count, 2);
    }
    for (const refused of [
      '{"readings": [{"timestamp": "2026-05-01T00:00:00Z"}]}',
      '{"station_id": "st-1", "readings": []}',
      '{"station_id": "st-1", "station_id": "st-1", "readings": [{}]}',
      '{"station_id": "st-1", "readings": [{}], "note": 1}',
      '{"station_id": "st-1", "readings": [{}]',
      '[{"station_id": "st-1", "readings": [{}]}]',
      '{"station_id": "st-1", "readings": [{"a": 1,}]}',
    ]) {
      assert.equal(takeArriving(Buffer.from(refused), 'json', []).outcome, 'refused', refused);
    }
    assert.equal(takeArriving(Buffer.from('{"station_id": "st-1", "readings": [{"__proto__": 1}]}'), 'json', []).outcome, 'refused');
    assert.equal(takeArriving(Buffer.from('{"station_id": "st-1", "readings": [{"m": {"constructor": {"prototype": 1}}}]}'), 'json', []).outcome, 'refused');
    // A line the scanner leaves to the parser, which refuses the key for the whole body.
    assert.equal(takeArriving(Buffer.from('{"timestamp": "2026-05-01T00:00:00Z"}\n{"\\u005f_proto__": 1}\n'), 'ndjson', []).outcome, 'syntax');
  });
});
