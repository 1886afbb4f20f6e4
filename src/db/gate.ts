import type { DatabasePool } from 'slonik';

/** No connection of the pool became free in time: the service is saturated, not broken (503, retry soon). */
export class PoolExhaustedError extends Error {
  constructor(waitedMs: number) {
    super(`no database connection became free within ${waitedMs} ms`);
    this.name = 'PoolExhaustedError';
  }
}

// Every pool method that checks out a connection for its duration.
const gated = new Set(['any', 'anyFirst', 'exists', 'many', 'manyFirst', 'maybeOne', 'maybeOneFirst', 'one', 'oneFirst', 'query', 'connect', 'transaction', 'stream']);

export type Gate = { acquire: () => Promise<void>; release: () => void };

/** At most `size` holders at a time; a caller that waits longer than `waitMs` gets PoolExhaustedError. */
export function createGate(size: number, waitMs: number): Gate {
  let free = size;
  const waiting: (() => void)[] = [];
  return {
    acquire: () => {
      if (free > 0) {
        free--;
        return Promise.resolve();
      }
      return new Promise<void>((resolve, reject) => {
        const grant = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(grant), 1);
          reject(new PoolExhaustedError(waitMs));
        }, waitMs);
        waiting.push(grant);
      });
    },
    release: () => {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

/**
 * Bounds how long a caller waits for a connection of `pool` (slonik queues without limit): at most `size`
 * callers hold one at a time, and one that waits longer than `waitMs` gets PoolExhaustedError, which the
 * API answers with 503 and Retry-After instead of holding the request until the client gives up.
 */
export function gatePool(pool: DatabasePool, size: number, waitMs: number): DatabasePool {
  const gate = createGate(size, waitMs);
  return new Proxy(pool, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof property !== 'string' || !gated.has(property) || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        await gate.acquire();
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          gate.release();
        }
      };
    },
  });
}
