import type { Middleware } from 'koa';

/** Headers every response carries; routes that need more (the widget's CSP) add their own. */
export function securityHeaders(): Middleware {
  return async (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Referrer-Policy', 'no-referrer');
    await next();
  };
}
