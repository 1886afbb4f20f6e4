import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { parseConfig } from '../../src/config.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';
import { createDb, type Db } from '../../src/db/pool.js';
import { createApp } from '../../src/app.js';
import { listen, type RunningServer } from '../../src/http/server.js';
import { addStation } from '../helpers/readings.js';

// A PostgreSQL of the test's own, so that stopping it leaves the machine's server and the other tests alone.
describe('the database restarts while the service runs', () => {
  let dir: string;
  let server: EmbeddedPostgres;
  let db: Db;
  let app: RunningServer;
  const port = 55_000 + (process.pid % 1000);

  before(async function () {
    this.timeout(60_000);
    dir = mkdtempSync(path.join(os.tmpdir(), 'envmon-restart-'));
    chmodSync(dir, 0o755);
    server = await startEmbeddedPostgres(path.join(dir, 'postgres'), port);
    const migrator = new pg.Pool({ connectionString: server.url, max: 1 });
    await migrate(migrator, 'portable');
    await migrator.end();
    const config = parseConfig({ DATABASE_URL: server.url, LOG_LEVEL: 'silent', RATE_LIMIT_PER_MINUTE: '0', STATEMENT_TIMEOUT_MS: '2000' });
    db = await createDb(server.url, 'portable', { poolSize: 4, statementTimeoutMs: 2000 });
    await addStation(db, 'restart-01');
    app = await listen(createApp({ config, db, log: pino({ level: 'silent' }) }).app, 0, '127.0.0.1');
  });
  after(async function () {
    this.timeout(30_000);
    await app?.close();
    await db?.close().catch(() => {});
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 problems during the outage, never hangs, and recovers by itself', async function () {
    this.timeout(90_000);
    assert.equal((await fetch(`${app.url}/api/v1/stations/`)).status, 200);
    await server.stop();

    for (const route of ['/api/v1/stations/', '/api/v1/data/latest/?station=restart-01', '/api/v1/data/download/?station=restart-01']) {
      const started = Date.now();
      const response = await fetch(`${app.url}${route}`);
      assert.equal(response.status, 503, route);
      assert.ok(Date.now() - started < 8_000, `${route} took ${Date.now() - started} ms`);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      const body = (await response.json()) as { type: string; detail: string };
      assert.equal(body.type, 'urn:envmon:problem:service-unavailable');
      assert.doesNotMatch(JSON.stringify(body), /at \w+ \(|node_modules/, 'no stack trace');
      assert.ok(response.headers.get('retry-after'));
    }
    const health = await fetch(`${app.url}/api/v1/health/`);
    assert.equal(health.status, 503);
    const healthBody = (await health.json()) as { ok: boolean; stations: unknown[] };
    assert.equal(healthBody.ok, false);
    assert.deepEqual(healthBody.stations, []);

    server = await startEmbeddedPostgres(path.join(dir, 'postgres'), port);
    let recovered = false;
    for (let i = 0; i < 40 && !recovered; i++) {
      recovered = (await fetch(`${app.url}/api/v1/stations/`)).status === 200;
      if (!recovered) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(recovered, 'the service answers again without a restart');
    assert.equal((await fetch(`${app.url}/api/v1/health/`)).status, 200);
    assert.equal((await fetch(`${app.url}/api/v1/data/download/?station=restart-01`)).status, 200);
  });
});
