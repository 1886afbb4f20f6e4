import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { classifyDatabaseError } from '../../db/errors.js';
import { Problem, internalError, serviceUnavailable } from '../problem.js';

/** Maps an error thrown below to the problem a client sees. */
function toProblem(error: unknown, requestId: string): Problem {
  if (error instanceof Problem) return error;
  const failure = classifyDatabaseError(error);
  if (failure === 'unavailable') return serviceUnavailable('the database is unavailable; try again shortly');
  if (failure === 'timeout') return serviceUnavailable('the query took too long and was cancelled; narrow the request or try again');
  return internalError(requestId);
}

/** Writes every error below as application/problem+json (RFC 9457); unknown errors are logged and hidden. */
export function problems(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      const requestId = String(ctx.state.requestId ?? '');
      const problem = toProblem(error, requestId);
      if (problem.status >= 500) log.error({ err: error, req_id: requestId }, 'request failed');
      // Headers meant for a successful answer (a download's file name) must not survive into the error.
      for (const name of ['Content-Disposition', 'Link', 'X-Attribution', 'Cache-Control']) ctx.remove(name);
      ctx.status = problem.status;
      ctx.set(problem.headers);
      ctx.type = 'application/problem+json';
      ctx.body = problem.body();
    }
  };
}
