import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { sql } from 'slonik';
import { z } from 'zod';
import { startTestApp, type TestEnv } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { freePort } from '../helpers/ports.js';
import { testServer } from '../helpers/server.js';

const engine = () => testServer().engines[0]!;
/** A client address of its own per test, so that counters never meet across tests or runs. */
const client = () => ({ 'X-Forwarded-For': `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}` });

async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  for (let i = 0; i < 50; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => { socket.destroy(); resolve(true); });
      socket.on('error', () => resolve(false));
    });
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('redis-server did not start');
}

describe('rate limit', () => {
  describe('in memory', () => {
    let env: TestEnv;
    before(async () => {
      env = await startTestApp(engine(), { RATE_LIMIT_PER_MINUTE: '5', TRUST_PROXY: 'true' });
    });
    after(() => env.close());

    it('counts public reads per client, with RateLimit headers, and refuses the sixth with a 429 problem', async () => {
      const headers = client();
      for (let i = 0; i < 5; i++) {
        const response = await env.get('/api/v1/health/', { headers });
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('ratelimit-limit'), '5');
        assert.equal(response.headers.get('ratelimit-remaining'), String(4 - i));
        const reset = Number(response.headers.get('ratelimit-reset'));
        assert.ok(reset >= 0 && reset <= 60, `reset ${reset}`);
      }
      const refused = await env.get('/api/v1/stations/', { headers });
      assert.equal(refused.status, 429);
      assert.equal(refused.headers.get('content-type'), 'application/problem+json');
      assert.equal(refused.headers.get('access-control-allow-origin'), '*');
      const retry = Number(refused.headers.get('retry-after'));
      assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
      assert.deepEqual(await refused.json(), {
        type: 'urn:envmon:problem:too-many-requests', title: 'Too Many Requests', status: 429,
        detail: `more than 5 requests a minute from this address; retry in ${retry} s`,
      });
      assert.equal((await env.get('/api/v1/stations/', { headers: client() })).status, 200, 'another client is not affected');
    });

    it('never counts ingest or CORS preflights', async () => {
      const headers = client();
      const key = await stationWithKey(env, 'rl-ingest');
      for (let i = 0; i < 5; i++) await env.get('/api/v1/', { headers });
      assert.equal((await env.get('/api/v1/', { headers })).status, 429);
      const ingest = await postBatch(env, key, { station_id: 'rl-ingest', readings: [{ timestamp: '2026-01-01T00:00:00Z', temperature_c: 1 }] }, headers);
      assert.equal(ingest.status, 201);
      assert.equal(ingest.headers.get('ratelimit-limit'), null);
      const preflight = await env.get('/api/v1/stations/', { method: 'OPTIONS', headers: { ...headers, Origin: 'https://x.example', 'Access-Control-Request-Method': 'GET' } });
      assert.equal(preflight.status, 204);
    });

    it('decides from the route, not the path\'s text: a route in another case is no route, and counted like any other request', async () => {
      const headers = client();
      const body = JSON.stringify({ url: '/api/v1/data/latest/' });
      for (let i = 0; i < 5; i++) {
        const spelt = await env.get('/API/V1/SNAPSHOTS/', { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body });
        assert.equal(spelt.status, 404, 'no route, so no snapshot made');
        assert.equal(spelt.headers.get('ratelimit-remaining'), String(4 - i));
      }
      const refused = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { ...headers, 'Content-Type': 'application/json' }, body });
      assert.equal(refused.status, 429, 'the real route finds the address over its limit');
      assert.equal((await env.get('/Api/V1/Stations/', { headers: client() })).status, 404);
      const count = await env.db.pool.oneFirst(sql.type(z.object({ count: z.number() }))`select count(*)::int as count from snapshots`);
      assert.equal(count, 0);
    });
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY is set', async () => {
    const env = await startTestApp(engine(), { RATE_LIMIT_PER_MINUTE: '3' });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await env.get('/api/v1/', { headers: client() })).status, 200);
      assert.equal((await env.get('/api/v1/', { headers: client() })).status, 429, 'a forged address does not reset the count');
    } finally {
      await env.close();
    }
  });

  it('shares one limit between two instances through Redis', async () => {
    const settings = { RATE_LIMIT_PER_MINUTE: '6', TRUST_PROXY: 'true', REDIS_URL: 'redis://127.0.0.1:6379' };
    const [a, b] = [await startTestApp(engine(), settings), await startTestApp(engine(), settings)];
    try {
      const headers = client();
      for (let i = 0; i < 3; i++) {
        assert.equal((await a.get('/api/v1/', { headers })).status, 200);
        assert.equal((await b.get('/api/v1/', { headers })).status, 200);
      }
      const remaining = (await a.get('/api/v1/', { headers })).status;
      assert.equal(remaining, 429, 'the seventh request, on either instance, is refused');
      assert.equal((await b.get('/api/v1/', { headers })).status, 429);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('counts in memory while Redis is away, and in Redis again when it returns', async function () {
    this.timeout(60_000);
    const port = await freePort();
    let redis = await startRedis(port);
    const env = await startTestApp(engine(), { RATE_LIMIT_PER_MINUTE: '4', TRUST_PROXY: 'true', REDIS_URL: `redis://127.0.0.1:${port}` });
    try {
      const headers = client();
      assert.equal((await env.get('/api/v1/', { headers })).headers.get('ratelimit-remaining'), '3');
      redis.kill('SIGKILL');
      await new Promise((r) => redis.once('exit', r));
      // Counted afresh in this instance's memory: four more pass, the fifth is refused.
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await env.get('/api/v1/', { headers })).status);
      assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
      redis = await startRedis(port);
      // Counted in Redis again once it is back: a new address's count appears there.
      let shared = false;
      for (let i = 0; i < 200 && !shared; i++) {
        await new Promise((r) => setTimeout(r, 100));
        const probe = client();
        await env.get('/api/v1/', { headers: probe });
        shared = (await redisKeys(port)).some((key) => key.endsWith(`:${probe['X-Forwarded-For']}`));
      }
      assert.ok(shared, 'counting in Redis resumed');
      assert.equal((await env.get('/api/v1/', { headers })).headers.get('ratelimit-remaining'), '3', 'counted in the restarted, empty Redis');
    } finally {
      await env.close();
      redis.kill('SIGKILL');
    }
  });

  it('takes the client behind TRUST_PROXY proxies as the address the outermost of them saw', async () => {
    for (const hops of [1, 2]) {
      const env = await startTestApp(engine(), { RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: String(hops) });
      try {
        const real = client()['X-Forwarded-For'];
        const proxies = Array.from({ length: hops - 1 }, (_, i) => `192.168.0.${i + 1}`);
        const statuses: number[] = [];
        for (let i = 0; i < 4; i++) {
          // The client writes whatever it likes on the left; each proxy appends what it saw.
          const forged = `203.0.113.${i}, 198.51.100.${i}`;
          statuses.push((await env.get('/api/v1/', { headers: { 'X-Forwarded-For': [forged, real, ...proxies].join(', ') } })).status);
        }
        assert.deepEqual(statuses, [200, 200, 200, 429], `TRUST_PROXY=${hops}`);
        const another = await env.get('/api/v1/', { headers: { 'X-Forwarded-For': [client()['X-Forwarded-For'], ...proxies].join(', ') } });
        assert.equal(another.status, 200, `TRUST_PROXY=${hops}: another client`);
      } finally {
        await env.close();
      }
    }
  });
});

/** The keys a Redis server holds. */
async function redisKeys(port: number): Promise<string[]> {
  const { Redis } = await import('ioredis');
  const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    return await redis.keys('*');
  } catch {
    return [];
  } finally {
    redis.disconnect();
  }
}
