import assert from 'node:assert/strict';
import { BatchEncoder } from '../../../src/readings/ingest/encoder.js';
import { parseTimestamp, RowError } from '../../../src/readings/ingest/rules.js';
import { rowValues } from '../../helpers/copyRows.js';

describe('timestamps posted by stations', () => {
  const valid: [string, string][] = [
    ['2026-05-01T00:00:00Z', '2026-05-01T00:00:00.000Z'],
    ['2026-05-01T00:00:00.250Z', '2026-05-01T00:00:00.250Z'],
    ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000Z'],
    ['2000-02-29T12:00:00Z', '2000-02-29T12:00:00.000Z'],
    ['2026-05-01T02:00:00+02:00', '2026-05-01T00:00:00.000Z'],
    ['2026-05-01T00:00:00', '2026-05-01T00:00:00.000Z'],
    ['2026-05-01 00:00', '2026-05-01T00:00:00.000Z'],
    ['2026-04-30T19:30:00-0430', '2026-05-01T00:00:00.000Z'],
    ['2026-05-01T00:00:00.999000Z', '2026-05-01T00:00:00.999Z'],
    ['2026-05-01T00:00:00.123000000Z', '2026-05-01T00:00:00.123Z'],
  ];
  for (const [input, expected] of valid) {
    it(`reads ${input} as ${expected}`, () => assert.equal(parseTimestamp(input), expected));
  }

  const invalid = ['2026-02-29T00:00:00Z', '1900-02-29T00:00:00Z', '2026-04-31T00:00:00Z', '2026-13-01T00:00:00Z',
    '2026-05-01T24:00:00Z', '2026-05-01T00:60:00Z', '2026-02-30T00:00:00', '1899-12-31T23:59:59Z', '2026-05-01', 'now',
    '2026-05-01T00:00:00.999999Z', '2026-05-01T00:00:00.0001Z', '2026-05-01T02:00:00.000000001+02:00'];
  for (const input of invalid) {
    it(`refuses ${input}`, () => assert.throws(() => parseTimestamp(input), RowError));
  }

  it('stores the flag the bounds give, whatever flag a device sends', () => {
    const encoder = new BatchEncoder('s1');
    encoder.add({ timestamp: '2026-05-01T00:00:00Z', temperature_c: 61, quality_flag: 'ok' });
    encoder.add({ timestamp: '2026-05-01T00:01:00Z', temperature_c: 20, quality_flag: 'invalid' });
    assert.deepEqual([0, 1].map((i) => rowValues(encoder.rows, i)[12]), ['suspect', 'ok']);
  });
});
