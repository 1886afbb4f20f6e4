import assert from 'node:assert/strict';
import http from 'node:http';
import { brotliCompressSync, constants } from 'node:zlib';
import { describeEngines } from '../../helpers/app.js';
import type { Problem } from '../../../src/http/problem.js';
import { batchesPerAddress, batchesPerStation, createIngestFairness } from '../../../src/readings/ingest/fairness.js';
import { stationWithKey } from '../../helpers/ingest.js';

/** Sends headers and `first` of a body that never ends; resolves with the answer's status and body. */
function answerBeforeBodyEnds(origin: string, headers: Record<string, string>, first: Buffer): Promise<{ status: number; body: string; request: http.ClientRequest }> {
  return new Promise((resolve, reject) => {
    const url = new URL('/api/v1/ingest/environmental/', origin);
    const request = http.request(url, { method: 'POST', headers: { 'Transfer-Encoding': 'chunked', ...headers } }, (response) => {
      let body = '';
      response.on('data', (chunk) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body, request }));
    });
    request.on('error', reject);
    request.write(first);
  });
}

describeEngines('the body of a batch', (env) => {
  it('is not read before the key is known: a request without a valid key is answered while its body is still coming', async () => {
    const first = Buffer.from('{"station_id":"ib-none","readings":[');
    const none = await answerBeforeBodyEnds(env().origin, { 'Content-Type': 'application/json' }, first);
    assert.equal(none.status, 401);
    none.request.destroy();
    const wrong = await answerBeforeBodyEnds(env().origin, { 'Content-Type': 'application/json', Authorization: 'Token nope_nope' }, first);
    assert.equal(wrong.status, 403);
    wrong.request.destroy();
  });

  it('is decompressed only up to the byte limit: a small brotli body that inflates past it is refused with a 413', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'ib-bomb');
    // 64 MB of spaces inside a JSON batch, a few kilobytes once compressed.
    const inflated = Buffer.concat([Buffer.from('{"station_id":"ib-bomb","readings":['), Buffer.alloc(64 * 1024 * 1024, 0x20), Buffer.from(']}')]);
    const bomb = brotliCompressSync(inflated, { params: { [constants.BROTLI_PARAM_QUALITY]: 4 } });
    assert.ok(bomb.length < 64 * 1024, `${bomb.length} bytes`);
    const response = await env().get('/api/v1/ingest/environmental/', {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'br', Authorization: `Token ${key}` }, body: bomb,
    });
    assert.equal(response.status, 413);
    assert.equal(response.headers.get('content-type'), 'application/problem+json');
    assert.match(((await response.json()) as { detail: string }).detail, /larger than \d+ bytes/);
  });
});

describeEngines('a batch without a body', (env) => {
  it('is a 400 saying the body is missing, in every format, whatever its Content-Type says', async () => {
    const key = await stationWithKey(env(), 'ib-empty');
    for (const type of ['application/json', 'application/json; charset=utf-8', 'application/x-ndjson', 'text/csv']) {
      const response = await env().get('/api/v1/ingest/environmental/', { method: 'POST', headers: { 'Content-Type': type, Authorization: `Token ${key}` } });
      assert.equal(response.status, 400, type);
      assert.match(((await response.json()) as { detail: string }).detail, /no body/, type);
    }
    const other = await env().get('/api/v1/ingest/environmental/', { method: 'POST', headers: { 'Content-Type': 'text/plain', Authorization: `Token ${key}` } });
    assert.equal(other.status, 415);
  });
});

describe('ingest shared fairly', () => {
  it('takes at most batchesPerStation batches of one station and batchesPerAddress from one address at a time', () => {
    const fairness = createIngestFairness();
    const held = Array.from({ length: batchesPerStation }, () => fairness.claim('f-one', '10.0.0.1'));
    assert.throws(() => fairness.claim('f-one', '10.0.0.2'), (error: Problem) => error.status === 429 && error.headers['Retry-After'] === '1');
    // Another station from the same address is taken, up to the address's own bound.
    const others = Array.from({ length: batchesPerAddress - batchesPerStation }, (_, i) => fairness.claim(`f-other-${i}`, '10.0.0.1'));
    assert.throws(() => fairness.claim('f-last', '10.0.0.1'), /batches at a time from one address/);
    held[0]!();
    held[0]!();
    fairness.claim('f-one', '10.0.0.2');
    for (const release of others) release();
    fairness.claim('f-last', '10.0.0.1');
  });
});

describeEngines('a slow ingest body', (env) => {
  it('is cut with a 408 when it stops arriving for STREAM_STALL_MS, and the station can post again', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'ib-slow');
    const headers = { 'Content-Type': 'application/json', Authorization: `Token ${key}` };
    const status = await new Promise<number>((resolve, reject) => {
      const request = http.request(new URL('/api/v1/ingest/environmental/', env().origin), { method: 'POST', headers: { ...headers, 'Transfer-Encoding': 'chunked' } }, (response) => {
        response.resume();
        resolve(response.statusCode!);
        request.destroy();
      });
      request.on('error', reject);
      request.write('{"station_id":"ib-slow","readings":[');
    });
    assert.equal(status, 408);
    const again = await env().get('/api/v1/ingest/environmental/', { method: 'POST', headers, body: JSON.stringify({ station_id: 'ib-slow', readings: [{ timestamp: '2026-01-01T00:00:00Z', temperature_c: 2 }] }) });
    assert.equal(again.status, 201);
  });
}, { STREAM_STALL_MS: '500' });

describeEngines('ingest requests with bad keys', (env) => {
  it('are refused with a 429 past 30 a minute from one address, before the database is asked', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) {
      const response = await env().get('/api/v1/ingest/environmental/', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token guess_${i}` }, body: '{}' });
      statuses.push(response.status);
      await response.arrayBuffer();
    }
    assert.deepEqual(statuses, [...Array(30).fill(403), 429]);
  });
});

describeEngines('an address that guesses keys', (env) => {
  it('does not lock out a station that authenticated from it (a NAT), while its guesses stay refused', async () => {
    const key = await stationWithKey(env(), 'nat-station');
    const post = (authorization: string, minute: number) => env().get('/api/v1/ingest/environmental/', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: authorization },
      body: JSON.stringify({ station_id: 'nat-station', readings: [{ timestamp: new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString(), temperature_c: 1 }] }),
    });
    assert.equal((await post(`Token ${key}`, 0)).status, 201);
    const guesses: number[] = [];
    for (let i = 0; i < 32; i++) guesses.push((await post(`Token nat_guess_${i}`, 1)).status);
    assert.equal(guesses.at(-1), 429);
    assert.equal((await post(`Token ${key}`, 2)).status, 201, 'the station goes on posting');
    assert.equal((await post('Token nat_guess_new', 3)).status, 429, 'a new guess is still refused');
  });
});
