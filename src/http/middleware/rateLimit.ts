import type { Redis } from 'ioredis';
import type { Context, Middleware } from 'koa';
import ratelimit from 'koa-ratelimit';
import type { Logger } from 'pino';
import { tooManyRequests } from '../problem.js';

const windowMs = 60_000;

/**
 * `perMinute` requests a minute per client address on the requests `counted` says are public (decided from
 * the route a request matches, never from its path's text), counted in Redis when a client is
 * given (shared by every instance) and in memory otherwise. Answers carry RateLimit-Limit, -Remaining
 * and -Reset (seconds until the window resets); a refused request is a 429 problem with Retry-After.
 * While Redis cannot be reached each instance counts in its own memory (logged once), so the limit
 * holds per instance until Redis is back.
 */
export function rateLimit(perMinute: number, log: Logger, counted: (ctx: Context) => boolean, redis?: Redis): Middleware {
  if (perMinute === 0) return (_ctx, next) => next();
  const limiterOn = (store: 'redis' | 'memory') => ratelimit({
    driver: store,
    db: store === 'redis' ? redis! : new Map(),
    duration: windowMs,
    max: perMinute,
    id: (ctx) => `envmon:ratelimit:${ctx.ip}`,
    whitelist: (ctx) => !counted(ctx),
    headers: { remaining: 'RateLimit-Remaining', reset: 'RateLimit-Reset', total: 'RateLimit-Limit' },
  });
  const inMemory = limiterOn('memory');
  const shared = redis ? limiterOn('redis') : inMemory;
  let storeDown = false;

  // koa-ratelimit writes the reset as an epoch time; the RateLimit header fields give seconds from now.
  const resetAsDelta = (ctx: Context) => {
    const reset = Number(ctx.response.get('RateLimit-Reset'));
    if (reset > 1e9) ctx.set('RateLimit-Reset', String(Math.min(windowMs / 1000, Math.max(0, Math.ceil(reset - Date.now() / 1000)))));
  };

  /** Runs `limiter`; true when it passed the request on (whatever happened below), false when it refused it. */
  const through = async (limiter: Middleware, ctx: Context, next: () => Promise<unknown>): Promise<boolean> => {
    let passed = false;
    await limiter(ctx, async () => {
      passed = true;
      resetAsDelta(ctx);
      await next();
    });
    return passed;
  };

  return async (ctx, next) => {
    let passed = false;
    try {
      passed = await through(shared, ctx, async () => {
        if (storeDown) {
          storeDown = false;
          log.info('rate limit store reachable again; counting shared again');
        }
        passed = true;
        await next();
      });
    } catch (error) {
      if (passed) throw error;
      if (!storeDown) {
        storeDown = true;
        log.warn({ err: error }, 'rate limit store unreachable; counting in this instance\'s memory until it is back');
      }
      passed = await through(inMemory, ctx, next);
    }
    const limited = ctx.state.rateLimit as { after: number } | undefined;
    if (!passed && limited) {
      resetAsDelta(ctx);
      const after = Math.min(windowMs / 1000, Math.max(1, limited.after));
      throw tooManyRequests(`more than ${perMinute} requests a minute from this address; retry in ${after} s`, after);
    }
  };
}
