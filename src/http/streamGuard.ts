import type { Context } from 'koa';
import type { Readable } from 'node:stream';
import { tooManyRequests } from './problem.js';

/**
 * Cuts a streamed answer when its client stops reading for `stallMs` (the socket's buffer stays full)
 * or when it outlives `deadlineMs`, whatever the client does: destroying the body ends its source (a
 * COPY) and returns the connection. Without it a client reading one byte a second holds a connection
 * for as long as it likes, the COPY long finished on the database side.
 */
export function guardStream(ctx: Context, body: Readable, limits: { deadlineMs: number; stallMs: number }): void {
  const res = ctx.res;
  const started = Date.now();
  let progress = started;
  const onDrain = () => (progress = Date.now());
  res.on('drain', onDrain);
  const timer = setInterval(() => {
    const now = Date.now();
    if (!res.writableNeedDrain) progress = now;
    if (now - progress > limits.stallMs || now - started > limits.deadlineMs) {
      clearInterval(timer);
      body.destroy();
      res.destroy();
    }
  }, Math.min(1_000, limits.stallMs, limits.deadlineMs));
  timer.unref();
  res.once('close', () => {
    clearInterval(timer);
    res.off('drain', onDrain);
    // The answer ended before its source did (the client went away, or was cut): end the source, which
    // cancels its COPY. Koa destroys only what it pipes, which is the compressor when the answer is compressed.
    if (!body.readableEnded) body.destroy();
  });
  // The source failed after the status was sent (its connection was lost): end the connection, so that the
  // client sees a cut answer at once instead of waiting for the rest. Koa leaves such a response open.
  body.once('error', () => res.destroy());
}

/** Takes one of a client address's concurrent slots until the answer closes. */
export type ClientSlots = (ctx: Context) => void;

/**
 * A client address's `limit` concurrent slots of one kind (downloads, live streams), counted for one app:
 * claiming one holds it until the answer closes, and throws a 429 problem saying `detail` when they are
 * all taken, so that one client cannot hold every connection of its kind.
 */
export function clientSlots(limit: number, detail: string): ClientSlots {
  const held = new Map<string, number>();
  return (ctx) => {
    const key = ctx.ip;
    const taken = held.get(key) ?? 0;
    if (taken >= limit) throw tooManyRequests(detail, 5);
    held.set(key, taken + 1);
    ctx.res.once('close', () => {
      const left = (held.get(key) ?? 1) - 1;
      if (left > 0) held.set(key, left);
      else held.delete(key);
    });
  };
}
