import type { Redis } from 'ioredis';
import type { Context, Middleware } from 'koa';
import ratelimit from 'koa-ratelimit';
import type { Logger } from 'pino';
import { tooManyRequests } from '../problem.js';

const windowMs = 60_000;

/** Public reads are every GET and HEAD; ingest (POST) and CORS preflights are never counted. */
const isPublicRead = (ctx: Context) => ctx.method === 'GET' || ctx.method === 'HEAD';

/**
 * `perMinute` requests a minute per client address on public reads, counted in Redis when a client is
 * given (shared by every instance) and in memory otherwise. Answers carry RateLimit-Limit, -Remaining
 * and -Reset (seconds until the window resets); a refused request is a 429 problem with Retry-After.
 * When Redis cannot be reached, requests are served uncounted (logged once) until it is back.
 */
export function rateLimit(perMinute: number, log: Logger, redis?: Redis): Middleware {
  if (perMinute === 0) return (_ctx, next) => next();
  const limiter = ratelimit({
    driver: redis ? 'redis' : 'memory',
    db: redis ?? new Map(),
    duration: windowMs,
    max: perMinute,
    id: (ctx) => `envmon:ratelimit:${ctx.ip}`,
    whitelist: (ctx) => !isPublicRead(ctx),
    headers: { remaining: 'RateLimit-Remaining', reset: 'RateLimit-Reset', total: 'RateLimit-Limit' },
  });
  let storeDown = false;

  // koa-ratelimit writes the reset as an epoch time; the RateLimit header fields give seconds from now.
  const resetAsDelta = (ctx: Context) => {
    const reset = Number(ctx.response.get('RateLimit-Reset'));
    if (reset > 1e9) ctx.set('RateLimit-Reset', String(Math.min(windowMs / 1000, Math.max(0, Math.ceil(reset - Date.now() / 1000)))));
  };

  return async (ctx, next) => {
    let passed = false;
    try {
      await limiter(ctx, async () => {
        passed = true;
        if (storeDown) {
          storeDown = false;
          log.info('rate limit store reachable again; counting resumed');
        }
        resetAsDelta(ctx);
        await next();
      });
    } catch (error) {
      if (passed) throw error;
      if (!storeDown) {
        storeDown = true;
        log.warn({ err: error }, 'rate limit store unreachable; serving reads without limits until it is back');
      }
      await next();
      return;
    }
    const limited = ctx.state.rateLimit as { after: number } | undefined;
    if (!passed && limited) {
      resetAsDelta(ctx);
      const after = Math.min(windowMs / 1000, Math.max(1, limited.after));
      throw tooManyRequests(`more than ${perMinute} requests a minute from this address; retry in ${after} s`, after);
    }
  };
}
