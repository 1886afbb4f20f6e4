import cors from '@koa/cors';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { pino } from 'pino';
import { answerEscapedErrors } from '../../src/http/escapedErrors.js';
import { requestContext } from '../../src/http/middleware/requestContext.js';
import { securityHeaders } from '../../src/http/middleware/securityHeaders.js';
import { describeEngines } from '../helpers/app.js';

/** An app with the service's outer middleware and, inside it, one that fails after setting success headers. */
async function failingApp(failure: () => unknown): Promise<{ origin: string; close: () => Promise<void>; logged: unknown[] }> {
  const logged: unknown[] = [];
  const app = new Koa();
  app.silent = true;
  app.on('error', (error) => logged.push(error));
  app.use(requestContext(pino({ level: 'silent' })));
  app.use(securityHeaders());
  app.use(cors({ origin: '*', exposeHeaders: ['X-Request-Id'] }));
  app.use((ctx) => {
    ctx.set('ETag', '"abc"');
    ctx.set('Cache-Control', 'public, max-age=60');
    ctx.set('Content-Disposition', 'attachment; filename="x.csv"');
    throw failure();
  });
  answerEscapedErrors(app);
  const server = http.createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, logged, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe('an error that escapes the problems middleware', () => {
  it('is a 500 problem document with the request id, CORS and security headers, and none of the failed answer\'s headers', async () => {
    const app = await failingApp(() => new Error('compression failed'));
    try {
      const response = await fetch(`${app.origin}/anything`, { headers: { Origin: 'https://example.org', 'X-Request-Id': 'req-42' } });
      assert.equal(response.status, 500);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      assert.equal(response.headers.get('x-request-id'), 'req-42');
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      for (const name of ['etag', 'cache-control', 'content-disposition']) assert.equal(response.headers.get(name), null, name);
      const problem = (await response.json()) as { status: number; type: string; request_id: string; detail: string };
      assert.equal(problem.status, 500);
      assert.equal(problem.type, 'urn:envmon:problem:internal-error');
      assert.equal(problem.request_id, 'req-42');
      assert.doesNotMatch(problem.detail, /compression failed/);
      assert.equal(app.logged.length, 1);
    } finally {
      await app.close();
    }
  });

  it('keeps the status and message of a client error a library raised', async () => {
    const app = await failingApp(() => Object.assign(new Error('request aborted'), { status: 400, expose: true, name: 'BadRequestError' }));
    try {
      const response = await fetch(`${app.origin}/anything`);
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('content-type'), 'application/problem+json');
      const problem = (await response.json()) as { status: number; title: string; detail: string };
      assert.deepEqual([problem.status, problem.title, problem.detail], [400, 'Bad Request', 'request aborted']);
    } finally {
      await app.close();
    }
  });
});

describeEngines('a problem answer', (env) => {
  it('carries neither an ETag nor Cache-Control', async () => {
    for (const path of ['/api/v1/nowhere/', '/api/v1/data/latest/?station=nobody', '/api/v1/data/aggregate/?station=x&metric=nonsense', '/api/v1/data/historical/?station=nobody&start=not-a-date']) {
      const response = await env().get(path);
      assert.ok(response.status >= 400, `${path}: ${response.status}`);
      assert.equal(response.headers.get('content-type'), 'application/problem+json', path);
      assert.equal(response.headers.get('etag'), null, path);
      assert.equal(response.headers.get('cache-control'), null, path);
      await response.arrayBuffer();
    }
  });
});
