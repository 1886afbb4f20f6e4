import fc from 'fast-check';
import { issueKey } from '../../src/stations/keys.js';
import { describeEngines } from '../helpers/app.js';
import { checkResponse, hostileRequest, operationsOf } from '../helpers/hostile.js';
import { addStation } from '../helpers/readings.js';

// A short run here; `npx tsx bench/fuzz.ts` runs 10,000 cases and more.
const runs = Number(process.env.FUZZ_RUNS ?? 250);
// Fixed, so that a run is replayable and a failure in review is the same failure here; FUZZ_SEED explores others.
const seed = Number(process.env.FUZZ_SEED ?? 20_261_123);

describeEngines('hostile input against every route of the OpenAPI document', (env) => {
  it(`never answers 5xx or a stack trace; every 4xx is a problem (${runs} cases, FUZZ_SEED=${seed})`, async function () {
    this.timeout(300_000);
    await addStation(env().db, 'fz-01');
    const { key } = await issueKey(env().db.pool, 'fz-01');
    const document = (await env().getJson('/api/v1/openapi.json')).body;
    const operations = operationsOf(document);
    await fc.assert(fc.asyncProperty(hostileRequest(operations, key), (request) => checkResponse(env().origin, request).then(() => true)), {
      numRuns: runs,
      seed,
    });
  });
});
