import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { listMigrations } from '../../src/db/migrate.js';
import { describeEngines } from '../helpers/app.js';
import { spawnServe, type ServeProcess } from '../helpers/cli.js';
import { stationWithKey } from '../helpers/ingest.js';
import { startProxy, type Proxy } from '../helpers/proxy.js';
import { testServer } from '../helpers/server.js';
import { openStream } from '../helpers/sse.js';

/** A request on a connection of its own, so that the proxy hands it to the next instance. */
function request(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

describeEngines('many instances on one database', (env) => {
  it('migrates once when several start at the same time on an empty database, and all of them serve', async function () {
    this.timeout(120_000);
    const url = await testServer().createEmptyDatabase();
    const started: ServeProcess[] = [];
    try {
      const settings = { DATABASE_URL: url, DB_ENGINE: env().engine, LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '0' };
      started.push(...(await Promise.all([spawnServe(settings), spawnServe(settings), spawnServe(settings)])));
      for (const serve of started) assert.equal((await request(`${serve.url}/api/v1/stations/`)).status, 200);
      const applying = started.filter((s) => s.stderr().includes('migrations applied'));
      assert.equal(applying.length, 1, 'one instance applies the migrations; the others wait for it and find nothing to do');
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        const names = (await client.query<{ name: string }>('select name from envmon_migrations')).rows.map((r) => r.name);
        assert.deepEqual(names.sort(), (await listMigrations(env().engine)).map((m) => m.name).sort());
      } finally {
        await client.end();
      }
    } finally {
      await Promise.all(started.map((s) => s.stop()));
      await testServer().dropDatabase(url);
    }
  });

  describe('two instances behind one address', () => {
    let instances: ServeProcess[] = [];
    let proxy: Proxy;
    before(async function () {
      this.timeout(60_000);
      const settings = {
        DATABASE_URL: env().databaseUrl, REDIS_URL: 'redis://127.0.0.1:6379', RATE_LIMIT_PER_MINUTE: '6', TRUST_PROXY: 'true',
      };
      instances = await Promise.all([spawnServe(settings), spawnServe(settings)]);
      // An instance serves before its Redis connection is up, uncounted (the limit fails open): wait until
      // each counts, from an address of its own.
      for (const [i, instance] of instances.entries()) {
        const deadline = Date.now() + 10_000;
        while (!(await request(`${instance.url}/api/v1/`, { headers: { 'X-Forwarded-For': `10.76.0.${i + 1}` } })).headers['ratelimit-remaining']) {
          if (Date.now() > deadline) throw new Error('an instance never counted in Redis');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      proxy = await startProxy(instances.map((i) => i.url));
    });
    after(async () => {
      await proxy?.close();
      await Promise.all(instances.map((i) => i.stop()));
    });

    it('share one rate limit, whichever instance a request reaches', async () => {
      // The address a load balancer would put in X-Forwarded-For.
      const headers = { 'X-Forwarded-For': `10.77.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}` };
      const before = [...proxy.connections];
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await request(`${proxy.url}/api/v1/`, { headers })).status);
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 429, 429]);
      assert.deepEqual(proxy.connections.map((n, i) => n - before[i]!), [4, 4], 'each instance took half of the requests');
    });

    it('deliver a reading posted through one instance to a subscriber of the other', async () => {
      const station = `many-${randomUUID().slice(0, 8)}`;
      const key = await stationWithKey(env(), station);
      const before = [...proxy.connections];
      const stream = await openStream(`${proxy.url}/api/v1/data/stream/?stations=${station}`, { 'X-Forwarded-For': '10.78.0.1' });
      try {
        await stream.next((e) => e.event === 'ready');
        const timestamp = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000).toISOString();
        const posted = await request(`${proxy.url}/api/v1/ingest/environmental/`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
          body: JSON.stringify({ station_id: station, readings: [{ timestamp, temperature_c: 3.5 }] }),
        });
        const answered = Date.now();
        assert.equal(posted.status, 201);
        assert.deepEqual(proxy.connections.map((n, i) => n - before[i]!), [1, 1], 'the stream and the post reached different instances');
        const event = await stream.next((e) => e.event === 'readings', 2_000);
        assert.ok(event.at - answered < 1_000, `delivered ${event.at - answered} ms after the 201`);
        assert.equal(JSON.parse(event.data).readings[0].timestamp, timestamp);
      } finally {
        stream.close();
      }
    });

    it('refresh the rollups one at a time: an instance waits while another holds the refresh', async function () {
      if (env().engine !== 'timescale') this.skip();
      this.timeout(60_000);
      const station = `many-${randomUUID().slice(0, 8)}`;
      const key = await stationWithKey(env(), station);
      // A backfill, below the horizon: its rollups wait for a refresh.
      const readings = Array.from({ length: 120 }, (_, i) => ({ timestamp: new Date(Date.UTC(2026, 0, 5) + i * 60_000).toISOString(), temperature_c: i }));
      const holder = new pg.Client({ connectionString: env().databaseUrl });
      await holder.connect();
      try {
        // What a refresh on another instance holds while it runs.
        await holder.query('select pg_advisory_lock(7301946500)');
        const posted = await request(`${proxy.url}/api/v1/ingest/environmental/`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
          body: JSON.stringify({ station_id: station, readings }),
        });
        assert.equal(posted.status, 201);
        let answered = false;
        const aggregate = request(`${proxy.url}/api/v1/data/aggregate/?station=${station}&period=hour`, { headers: { 'X-Forwarded-For': '10.79.0.1' } })
          .finally(() => (answered = true));
        await new Promise((resolve) => setTimeout(resolve, 700));
        assert.equal(answered, false, 'the aggregate waits for the refresh, which waits for the one in progress');
        const waiting = await holder.query(`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and query ilike 'call envmon_refresh_rollups%' and wait_event_type = 'Lock'`);
        assert.ok(waiting.rows[0].n >= 1, 'a refresh waits on the lock');
        await holder.query('select pg_advisory_unlock(7301946500)');
        const answer = await aggregate;
        assert.equal(answer.status, 200);
        assert.deepEqual(JSON.parse(answer.body).results.map((r: { count: number }) => r.count), [60, 60]);
      } finally {
        await holder.end();
      }
    });
  });
});
