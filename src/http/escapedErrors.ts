import type Koa from 'koa';
import type { Context } from 'koa';
import { internalError, Problem } from './problem.js';

/** Headers an answer keeps when an error replaces it: who asked, how the browser may read it. */
const keptOnError = ['x-request-id', 'x-content-type-options', 'referrer-policy', 'access-control-allow-origin', 'access-control-expose-headers', 'vary'];

/**
 * The answer to an error that escaped every middleware (one raised outside the problems middleware, by
 * compression or content negotiation): a problem document with the request id, CORS and the security
 * headers, as every other error is, rather than Koa's bare text/plain. Whatever the failed answer had
 * set besides (an ETag, Cache-Control, a download's file name) is dropped. An answer already started is
 * left to Koa, which can only end the connection.
 */
export function answerEscapedErrors(app: Koa): void {
  const koaOnError = app.context.onerror;
  app.context.onerror = function onerror(this: Context, error: unknown) {
    if (error == null) return;
    if (this.headerSent || !this.writable) {
      koaOnError.call(this, error as Error);
      return;
    }
    this.app.emit('error', error, this);
    const res = this.res;
    const kept = new Map(keptOnError.flatMap((name) => (res.hasHeader(name) ? [[name, res.getHeader(name)!] as const] : [])));
    // @koa/cors hands its headers over on the error it rethrows.
    const carried = (error as { headers?: Record<string, string> }).headers ?? {};
    for (const name of res.getHeaderNames()) res.removeHeader(name);
    for (const [name, value] of kept) res.setHeader(name, value);
    for (const [name, value] of Object.entries(carried)) {
      if (name.toLowerCase().startsWith('access-control-')) res.setHeader(name, value);
    }
    const requestId = String(this.state.requestId ?? '');
    const problem = error instanceof Problem ? error : escapedProblem(error, requestId);
    for (const [name, value] of Object.entries(problem.headers)) res.setHeader(name, value);
    const body = JSON.stringify(problem.body());
    res.statusCode = problem.status;
    res.setHeader('Content-Type', 'application/problem+json');
    res.setHeader('Content-Length', Buffer.byteLength(body));
    res.end(this.method === 'HEAD' ? undefined : body);
  };
}

/** A client error raised by a library (http-errors with `expose`) keeps its status and message; anything else is a 500. */
function escapedProblem(error: unknown, requestId: string): Problem {
  const { status, expose, message } = error as { status?: unknown; expose?: unknown; message?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 500 && expose === true && typeof message === 'string') {
    const title = (error as { name?: string }).name?.replace(/Error$/, '').replace(/([a-z])([A-Z])/g, '$1 $2') || 'Bad Request';
    return new Problem(status, title.toLowerCase().replace(/\s+/g, '-'), title, message);
  }
  return internalError(requestId);
}
