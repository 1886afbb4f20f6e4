import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { classifyDatabaseError } from '../../db/errors.js';
import { Problem, badRequest, internalError, serviceUnavailable } from '../problem.js';

/** Maps an error thrown below to the problem a client sees: the one place where failures become statuses. */
function toProblem(error: unknown, requestId: string): Problem {
  if (error instanceof Problem) return error;
  switch (classifyDatabaseError(error)) {
    case 'unavailable':
      return serviceUnavailable('the database is unavailable; try again shortly');
    case 'timeout':
      return serviceUnavailable('the query took too long and was cancelled; narrow the request or try again');
    case 'busy':
      return serviceUnavailable('the service is busy; try again in a moment', {}, 1);
    case 'rejected':
      return badRequest('the database refused a value of this request');
    default:
      return internalError(requestId);
  }
}

/**
 * Another way to show a problem where JSON would reach a person rather than a program (the widget's
 * iframe): the first renderer that applies writes the answer; its status and headers stay the problem's.
 */
export type ProblemRenderer = { applies: (ctx: Context) => boolean; write: (ctx: Context, problem: Problem) => void };

/**
 * Writes every error below as application/problem+json (RFC 9457), or through the first renderer that
 * applies; unknown errors are logged and hidden.
 */
export function problems(log: Logger, renderers: ProblemRenderer[] = []): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      // Serialised here rather than by Koa after the middleware, so that a body that cannot be written
      // (a value nested too deep for JSON.stringify) is a problem answer with CORS and a request id too.
      const body: unknown = ctx.body;
      if (body !== null && typeof body === 'object' && !Buffer.isBuffer(body) && typeof (body as { pipe?: unknown }).pipe !== 'function') {
        const type = ctx.response.get('Content-Type');
        ctx.body = JSON.stringify(body);
        ctx.type = type || 'application/json';
      }
    } catch (error) {
      const requestId = String(ctx.state.requestId ?? '');
      const problem = toProblem(error, requestId);
      if (problem.status === 500) log.error({ err: error, req_id: requestId, status: 500, path: ctx.path }, 'request failed');
      else if (problem.status >= 500) log.warn({ err: error, req_id: requestId, status: problem.status }, 'request failed');
      // Headers meant for a successful answer (a download's file name) must not survive into the error.
      for (const name of ['Content-Disposition', 'Link', 'X-Attribution', 'Cache-Control']) ctx.remove(name);
      ctx.status = problem.status;
      ctx.set(problem.headers);
      const renderer = renderers.find((r) => r.applies(ctx));
      if (renderer) {
        renderer.write(ctx, problem);
        return;
      }
      ctx.type = 'application/problem+json';
      // A string, as for success answers: nothing after this middleware serialises.
      ctx.body = JSON.stringify(problem.body());
    }
  };
}
