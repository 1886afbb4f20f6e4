// bench/fuzz: the hostile-input property at bench length (10,000 cases by default, FUZZ_RUNS to change),
// against every route of the OpenAPI document, on every engine; prints cases, routes covered and statuses.
import fc from 'fast-check';
import { pino } from 'pino';
import { parseConfig } from '../src/config.js';
import { createDb } from '../src/db/pool.js';
import { createApp } from '../src/app.js';
import { listen } from '../src/http/server.js';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { checkResponse, hostileRequest, operationsOf } from '../test/helpers/hostile.js';
import { openServer, saveResults } from './lib.js';

const runs = Number(process.env.FUZZ_RUNS ?? 10_000);
// A new seed each run, so that the long run keeps finding new cases; printed so that any failure replays.
const seed = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`FUZZ_SEED=${seed}`);
const server = await openServer();
const results: Record<string, unknown>[] = [];
try {
  for (const engine of server.engines) {
    const databaseUrl = await server.createDatabase(engine);
    const config = parseConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0' });
    const db = await createDb(databaseUrl, engine, { poolSize: 8, statementTimeoutMs: 15_000 });
    await upsertStation(db.pool, { station_id: 'fz-01', name: 'Fuzz', location_name: '', altitude_m: 1, latitude: null, longitude: null, status: 'active' });
    const { key } = await issueKey(db.pool, 'fz-01');
    const { app, api } = createApp({ config, db, log: pino({ level: 'silent' }) });
    const running = await listen(app, 0, '127.0.0.1');
    const operations = operationsOf(api.document() as never);
    const statuses = new Map<number, number>();
    const routes = new Set<string>();
    const started = performance.now();
    try {
      await fc.assert(
        fc.asyncProperty(hostileRequest(operations, key), async (request) => {
          const status = await checkResponse(running.url, request);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          routes.add(`${request.method} ${operations.find((o) => new RegExp(`^${o.path.replace(/\{\w+\}/g, '[^/]*')}(\\?|$)`).test(request.url))?.path ?? '?'}`);
          return true;
        }),
        { numRuns: runs, seed },
      );
    } finally {
      await running.close();
      await db.close();
      await server.dropDatabase(databaseUrl);
    }
    const row = {
      engine, seed, cases: runs, routes_in_document: operations.length, routes_covered: [...routes].filter((r) => !r.endsWith('?')).length,
      seconds: +((performance.now() - started) / 1000).toFixed(1), statuses: Object.fromEntries([...statuses].sort()),
    };
    results.push(row);
    console.log(`${engine.padEnd(9)} ${row.cases} cases, ${row.routes_covered}/${row.routes_in_document} routes, ${row.seconds} s, no 5xx; statuses ${JSON.stringify(row.statuses)}`);
  }
} finally {
  await server.close();
}
saveResults('fuzz', results);
