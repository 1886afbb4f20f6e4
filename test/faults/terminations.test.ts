import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { issueKey } from '../../src/stations/keys.js';
import { describeEngines } from '../helpers/app.js';
import { spawnServe } from '../helpers/cli.js';
import { addStation } from '../helpers/readings.js';
import { daysAgo, eventually } from '../helpers/rollups.js';

const appName = 'envmon-terminations';

describeEngines('backends terminated under concurrent ingest and reads', (env) => {
  it('keeps the process up, answers no 500, and stores every reading it acknowledged', async function () {
    this.timeout(120_000);
    const { db } = env();
    await addStation(db, 'term-read');
    await db.pool.query(sql.type(z.object({}))`
      insert into readings (station_id, ts, temperature_c, pm10, quality_flag)
      select 'term-read', date_trunc('minute', now()) - i * interval '1 minute', i % 30, i % 50, 'ok' from generate_series(1, 20000) as i
    `);
    await db.pool.query(sql.type(z.object({}))`insert into station_latest select 'term-read', max(ts) from readings where station_id = 'term-read'`);
    const keys: string[] = [];
    for (let c = 0; c < 3; c++) {
      await addStation(db, `term-in-${c}`);
      keys.push((await issueKey(db.pool, `term-in-${c}`)).key);
    }
    const url = new URL(env().databaseUrl);
    url.searchParams.set('application_name', appName);
    const serve = await spawnServe({ DATABASE_URL: url.toString(), RATE_LIMIT_PER_MINUTE: '0', LOG_LEVEL: 'error' });
    let exited = false;
    serve.child.once('exit', () => (exited = true));

    // A request may fail, never hang: each has 30 s, and a timeout is recorded with its path.
    const hung: string[] = [];
    const timed = (path: string, init: RequestInit = {}) =>
      fetch(`${serve.url}${path}`, { ...init, signal: AbortSignal.timeout(30_000) }).catch((error: Error & { cause?: { code?: string } }) => {
        if (error.name === 'TimeoutError') hung.push(`${init.method ?? 'GET'} ${path}`);
        throw error;
      });
    const statuses = new Map<number | string, number>();
    const count = (status: number | string) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    const acknowledged: { station: string; timestamps: string[] }[] = [];
    const until = Date.now() + 6_000;
    const ingest = async (c: number) => {
      for (let b = 0; Date.now() < until; b++) {
        const start = Date.parse(daysAgo(90)) + (b * 200 + c * 37) * 60_000;
        const readings = Array.from({ length: 200 }, (_, i) => ({ timestamp: new Date(start + i * 60_000).toISOString(), temperature_c: i % 40 }));
        try {
          const response = await timed('/api/v1/ingest/environmental/', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', Authorization: `Token ${keys[c]}` },
            body: JSON.stringify({ station_id: `term-in-${c}`, readings }),
          });
          const result = (await response.json()) as { errors?: number };
          count(response.status);
          if (response.status === 201) assert.equal(result.errors, 0);
          if (response.status === 201) acknowledged.push({ station: `term-in-${c}`, timestamps: readings.map((r) => r.timestamp) });
        } catch (error) {
          count((error as { cause?: { code?: string } }).cause?.code ?? 'network');
        }
      }
    };
    const paths = [
      '/api/v1/data/latest/?station=term-read', '/api/v1/data/historical/?station=term-read&hours=24',
      '/api/v1/data/aggregate/?station=term-read&period=hour', '/api/v1/data/compare/?stations=term-read&param=pm10&hours=48',
      '/api/v1/stations/', '/api/v1/health/', '/api/v1/data/download/?station=term-read',
    ];
    const read = async (r: number) => {
      for (let i = 0; Date.now() < until; i++) {
        try {
          const response = await timed(paths[(i + r) % paths.length]!);
          await response.arrayBuffer();
          count(response.status);
        } catch (error) {
          count((error as { cause?: { code?: string } }).cause?.code ?? 'network');
        }
      }
    };
    let terminated = 0;
    const chaos = (async () => {
      while (Date.now() < until) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        terminated += await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
          select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
          where application_name = ${appName} and datname = current_database()
        `);
      }
    })();
    try {
      await Promise.all([...[0, 1, 2].map(ingest), ...[0, 1, 2].map(read), chaos]);
      console.log(`      ${terminated} backends terminated; statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
      assert.deepEqual(hung, [], 'requests that hung');
      assert.equal(exited, false, `the process exited: ${serve.stderr().slice(-2000)}`);
      const failures = serve.stderr().split('\n').filter((line) => line.includes('"status":500')).map((line) => line.slice(0, 2500));
      assert.equal(statuses.get(500) ?? 0, 0, `500s: ${failures.join('\n')}`);
      assert.ok(terminated > 5);
      assert.ok((statuses.get(201) ?? 0) > 0 && (statuses.get(200) ?? 0) > 0);
      for (const { station, timestamps } of acknowledged) {
        const stored = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
          select count(*)::int as n from readings where station_id = ${station} and ts = any(${sql.array(timestamps, 'timestamptz')})
        `);
        assert.equal(stored, timestamps.length);
      }
      // Afterwards the service answers normally again, by itself.
      await eventually(async () => assert.equal((await fetch(`${serve.url}/api/v1/data/latest/?station=term-read`)).status, 200), 30_000);
    } finally {
      await serve.stop();
    }
  });
});
