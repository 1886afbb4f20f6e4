import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
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

  it('serves reads while Redis is away, and counts again when it returns', async function () {
    this.timeout(30_000);
    const port = await freePort();
    let redis = await startRedis(port);
    const env = await startTestApp(engine(), { RATE_LIMIT_PER_MINUTE: '4', TRUST_PROXY: 'true', REDIS_URL: `redis://127.0.0.1:${port}` });
    try {
      const headers = { 'X-Forwarded-For': `10.99.${randomUUID().length}.1` };
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await env.get('/api/v1/', { headers })).headers.get('ratelimit-remaining'), '3');
      redis.kill('SIGKILL');
      await new Promise((r) => redis.once('exit', r));
      for (let i = 0; i < 8; i++) {
        const started = Date.now();
        const response = await env.get('/api/v1/', { headers });
        assert.equal(response.status, 200, 'fail open');
        assert.ok(Date.now() - started < 1_500, 'no request waits for Redis');
      }
      redis = await startRedis(port);
      let counted = false;
      for (let i = 0; i < 40 && !counted; i++) {
        await new Promise((r) => setTimeout(r, 250));
        counted = (await env.get('/api/v1/', { headers })).headers.get('ratelimit-remaining') !== null;
      }
      assert.ok(counted, 'counting resumed');
      let refused = false;
      for (let i = 0; i < 6 && !refused; i++) refused = (await env.get('/api/v1/', { headers })).status === 429;
      assert.ok(refused, 'the limit applies again');
    } finally {
      await env.close();
      redis.kill('SIGKILL');
    }
  });
});
