import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';

const runs = Number(process.env.FUZZ_RUNS ?? 60);
// Fixed and printed, so that a failure replays; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_123);

type Row = { json: string; good: boolean };

// Text a station might send: any unicode, emoji and right-to-left marks included, but no NUL or lone surrogate.
const goodText = fc.string({ unit: 'grapheme', maxLength: 20 }).filter((s) => !s.includes('\u0000'));
const goodNumber = fc.oneof(fc.double({ min: -1e9, max: 1e9, noNaN: true }), fc.integer({ min: -1000, max: 1000 }), fc.constant(null));
const shallow: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', maxDepth: 4 }, goodText, goodNumber, fc.boolean(), fc.array(tie('value'), { maxLength: 3 }), fc.dictionary(goodText, tie('value'), { maxKeys: 3 })),
})).value;

/** A row the service must store; its timestamp comes from `minute`. */
const goodRow = (minute: number) =>
  fc
    .record({
      temperature_c: goodNumber, humidity_rh: goodNumber, pm2_5: goodNumber, air_hum: fc.constant(undefined),
      firmware_version: fc.option(goodText, { nil: null }),
      module_data: fc.option(fc.dictionary(goodText, shallow, { maxKeys: 4 }), { nil: null }),
      soil_temp: fc.option(goodNumber, { nil: undefined }),
    })
    .map((values): Row => ({ json: JSON.stringify({ timestamp: new Date(Date.UTC(2026, 0, 1) + minute * 60_000).toISOString(), ...values }), good: true }));

/** A row the service must count as an error: each breaks one limit, the rest of it well formed. */
const badRow = (minute: number) => {
  const ts = new Date(Date.UTC(2026, 0, 1) + minute * 60_000).toISOString();
  return fc.oneof(
    fc.constant(`{"timestamp":"${ts}","firmware_version":"a\\u0000b"}`),
    goodText.map((t) => `{"timestamp":"${ts}","module_data":{"k":${JSON.stringify(t)},"bad":"\\ud83d"}}`),
    fc.constant(`{"timestamp":"${ts}","x\\u0000y":1}`),
    fc.integer({ min: 17, max: 5000 }).map((depth) => `{"timestamp":"${ts}","module_data":${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}}`),
    fc.oneof(fc.double({ min: 1.0000001e9, max: 1.7e308, noNaN: true }), fc.double({ min: -1.7e308, max: -1.0000001e9, noNaN: true })).map((v) => `{"timestamp":"${ts}","pm10":${v}}`),
    fc.constant(`{"timestamp":"${ts}","module_data":{"blob":"${'z'.repeat(17_000)}"}}`),
    fc.integer({ min: 1, max: 5000 }).map((years) => `{"timestamp":"${new Date(Date.now() + years * 3.2e10).toISOString().replace(/^\+0*/, '')}","pm10":1}`),
    fc.constant(`{"timestamp":"${ts}","temperature_c":"warm"}`),
  ).map((json): Row => ({ json, good: false }));
};

describeEngines('ingest batches of good and hostile rows (property)', (env) => {
  it(`stores every good row and counts every bad one, whatever the mix (${runs} batches, FUZZ_SEED=${seed})`, async function () {
    this.timeout(300_000);
    const key = await stationWithKey(env(), 'prop-01');
    let base = 0;
    const batches = fc.array(fc.boolean(), { minLength: 1, maxLength: 40 }).chain((kinds) => {
      const start = base;
      base += kinds.length;
      return fc.tuple(...kinds.map((good, i) => (good ? goodRow(start + i) : badRow(start + i))));
    });
    await fc.assert(
      fc.asyncProperty(batches, async (rows) => {
        const before = await env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from readings where station_id = 'prop-01'`);
        const result = await postBatch(env(), key, `{"station_id":"prop-01","readings":[${rows.map((r) => r.json).join(',')}]}`);
        assert.equal(result.status, 201, JSON.stringify(result.body));
        const good = rows.filter((r) => r.good).length;
        assert.equal(result.body.accepted + result.body.duplicates, good, JSON.stringify(result.body));
        assert.equal(result.body.errors, rows.length - good);
        assert.deepEqual(result.body.error_details.map((d: { index: number }) => d.index), rows.flatMap((r, i) => (r.good ? [] : [i])));
        const after = await env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from readings where station_id = 'prop-01'`);
        assert.equal(after - before, result.body.accepted);
        // Stored as sent: the module_data of a good row reads back equal.
        const last = rows.findLast((r) => r.good);
        if (last) {
          const sent = JSON.parse(last.json) as { timestamp: string; module_data: unknown };
          const latest = await env().db.pool.maybeOneFirst(sql.type(z.object({ m: z.unknown() }))`
            select module_data as m from readings where station_id = 'prop-01' and ts = ${sent.timestamp}`);
          if (sent.module_data) assert.deepEqual(latest, { ...(sent.module_data as object), ...(JSON.parse(last.json).soil_temp !== undefined ? { soil_temp: JSON.parse(last.json).soil_temp } : {}) });
        }
        return true;
      }),
      { numRuns: runs, seed },
    );
  });
});
