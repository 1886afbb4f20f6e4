import assert from 'node:assert/strict';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines, type TestEnv } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { addStation } from '../helpers/readings.js';

/** Asserts a complete problem answer: the status, problem+json, a request id, CORS, and the parameter named. */
async function assertProblem(response: Response, status: number, param?: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.ok(response.headers.get('x-request-id'), 'a request id');
  const body = JSON.parse(text) as Record<string, unknown> & { errors?: { param: string }[] };
  assert.equal(body.status, status);
  if (param) assert.ok(body.errors?.some((e) => e.param === param), `names ${param}: ${text}`);
  return body;
}

const post = (env: TestEnv, key: string, body: Buffer | string, headers: Record<string, string>) =>
  env.get('/api/v1/ingest/environmental/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}`, ...headers },
    body,
  });

describeEngines('every bad input is a 4xx naming what was wrong', (env) => {
  before(async () => {
    await addStation(env().db, 'fail-01');
  });

  it('refuses a NUL in any query parameter, and search text that the query parser cannot take falls back to plain words', async () => {
    await assertProblem(await env().get('/api/v1/search/?q=%00'), 400, 'q');
    await assertProblem(await env().get('/api/v1/data/latest/?station=fail%0001'), 400, 'station');
    await assertProblem(await env().get('/api/v1/notes/?programme=a%00b'), 400, 'programme');
    for (const q of ['-'.repeat(40), '!'.repeat(40), '"'.repeat(41), '-a '.repeat(60)]) {
      const response = await env().get(`/api/v1/search/?q=${encodeURIComponent(q)}`);
      assert.equal(response.status, 200, `${q}: ${await response.clone().text()}`);
      await response.arrayBuffer();
    }
  });

  it('refuses the year 0000 in every date parameter, a download before its first byte', async () => {
    await assertProblem(await env().get('/api/v1/notes/?from_date=0000-01-01'), 400, 'from_date');
    await assertProblem(await env().get('/api/v1/data/aggregate/?station=fail-01&to_date=0000-06-01'), 400, 'to_date');
    await assertProblem(await env().get('/api/v1/data/download/?station=fail-01&from_date=0000-01-01'), 400, 'from_date');
    assert.equal((await env().get('/api/v1/data/aggregate/?station=fail-01&from_date=0001-01-01&to_date=9999-12-31')).status, 200);
  });

  it('answers 415 for a content encoding it does not take and 400 for a corrupt gzip body, storing nothing', async () => {
    const key = await stationWithKey(env(), 'fail-enc');
    const body = JSON.stringify({ station_id: 'fail-enc', readings: [{ timestamp: '2026-01-01T00:00:00Z', temperature_c: 1 }] });
    for (const encoding of ['compress', 'gzip, gzip', 'zstd']) {
      await assertProblem(await post(env(), key, body, { 'Content-Encoding': encoding }), 415);
    }
    await assertProblem(await post(env(), key, Buffer.from('not gzip at all'), { 'Content-Encoding': 'gzip' }), 400);
    await assertProblem(await post(env(), key, gzipSync(body).subarray(0, 20), { 'Content-Encoding': 'gzip' }), 400);
    await assertProblem(await post(env(), key, Buffer.from('{}'), { 'Content-Encoding': 'br' }), 400);
    assert.equal((await post(env(), key, brotliCompressSync(body), { 'Content-Encoding': 'br' })).status, 201);
    const again = await post(env(), key, gzipSync(body), { 'Content-Encoding': 'GZip' });
    const text = await again.text();
    assert.equal(again.status, 201, text);
    assert.equal((JSON.parse(text) as { duplicates: number }).duplicates, 1);
  });

  it('answers a complete problem, CORS and request id included, when stored data cannot be served', async () => {
    // As an older version could store: module_data nested thousands deep.
    const deep = `${'{"a":'.repeat(3000)}1${'}'.repeat(3000)}`;
    await addStation(env().db, 'fail-deep');
    // One timestamp for both rows: two statements see two different now()s.
    const ts = new Date(Math.floor(Date.now() / 1000) * 1000 - 60_000).toISOString();
    await env().db.pool.query(sql.type(z.object({}))`
      insert into readings (station_id, ts, temperature_c, quality_flag, module_data)
      values ('fail-deep', ${ts}, 1, 'ok', ${deep}::jsonb)
    `);
    await env().db.pool.query(sql.type(z.object({}))`
      insert into station_latest values ('fail-deep', ${ts}) on conflict (station_id) do update set ts = excluded.ts
    `);
    for (const path of ['/api/v1/stations/?output=geojson', '/api/v1/data/latest/?station=fail-deep']) {
      const response = await env().get(path, { headers: { Origin: 'https://example.org' } });
      if (response.status === 200) {
        JSON.parse(await response.text());
        continue;
      }
      const body = await assertProblem(response, 500);
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
      assert.equal(body.request_id, response.headers.get('x-request-id'));
    }
    await env().db.pool.query(sql.type(z.object({}))`delete from readings where station_id = 'fail-deep'`);
    await env().db.pool.query(sql.type(z.object({}))`delete from station_latest where station_id = 'fail-deep'`);
  });

  it('stores nothing from a refused body and everything from the next good one', async () => {
    const key = await stationWithKey(env(), 'fail-next');
    const good = { station_id: 'fail-next', readings: [{ timestamp: '2026-02-01T00:00:00Z', pm10: 3 }] };
    await assertProblem(await post(env(), key, JSON.stringify(good), { 'Content-Encoding': 'zstd' }), 415);
    assert.equal((await postBatch(env(), key, good)).body.accepted, 1);
  });
});

describeEngines(
  'an exhausted pool',
  (env) => {
    it('answers 503 with Retry-After, not 500, and serves again once a connection is free', async function () {
      this.timeout(60_000);
      await addStation(env().db, 'pool-01');
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const holding = env().db.pool.connect(() => held);
      await new Promise((resolve) => setTimeout(resolve, 100));
      try {
        const response = await env().get('/api/v1/data/latest/?station=pool-01');
        await assertProblem(response, 503);
        assert.ok(Number(response.headers.get('retry-after')) >= 1);
      } finally {
        release();
        await holding;
      }
      assert.equal((await env().get('/api/v1/data/latest/?station=pool-01')).status, 404);
    });
  },
  { DB_POOL_SIZE: '1' },
);
