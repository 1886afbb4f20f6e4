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

export type Gate = {
  acquire: () => Promise<void>;
  /** Takes a place if more than `spare` are free now, never waiting; says whether it did. */
  tryAcquire: (spare?: number) => boolean;
  release: () => void;
};

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
    tryAcquire: (spare = 0) => {
      if (free <= spare) return false;
      free--;
      return true;
    },
    release: () => {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

/** A pool call outlived its deadline (its connection is stuck): the request gets a 503 instead of hanging. */
export class PoolCallTimeoutError extends Error {
  constructor(ms: number) {
    super(`a database call did not settle within ${ms} ms`);
    this.name = 'PoolCallTimeoutError';
  }
}

export type GatedPool = { pool: DatabasePool; close: () => Promise<void> };

/**
 * The query pool as the service uses it, made safe around slonik's: (1) at most `size` callers hold a
 * connection and a caller waits at most `waitMs` for one (slonik queues without limit), then gets
 * PoolExhaustedError (503); (2) a call that has not settled `callMs` after it started is failed with
 * PoolCallTimeoutError (503) rather than left hanging; (3) when connections stay stuck in slonik's
 * "pending destroy" state (seen when backends are terminated at the wrong moment: each one lowers the
 * pool's capacity for good, until every query waits forever; the family of gajus/slonik#631), the pool
 * is replaced by a fresh one.
 */
export function createGatedPool(
  open: () => Promise<DatabasePool>,
  first: DatabasePool,
  limits: { size: number; waitMs: number; callMs: number; checkEveryMs?: number; stuckForMs?: number },
): GatedPool {
  const gate = createGate(limits.size, limits.waitMs);
  let current = first;
  let stuckSince: number | null = null;
  let replacing = false;
  const retired: DatabasePool[] = [];
  const check = () => {
    if (replacing) return;
    const stuck = current.state().pendingDestroyConnections;
    if (stuck === 0) {
      stuckSince = null;
      return;
    }
    stuckSince ??= Date.now();
    if (Date.now() - stuckSince < (limits.stuckForMs ?? 5_000)) return;
    replacing = true;
    open()
      .then((fresh) => {
        retired.push(current);
        // The old pool's stuck connections are dead already; ending it may never finish, so it is not awaited.
        void current.end().catch(() => {});
        current = fresh;
        stuckSince = null;
      })
      .catch(() => {})
      .finally(() => {
        replacing = false;
      });
  };
  const timer = setInterval(check, limits.checkEveryMs ?? 1_000);
  timer.unref();
  const pool = new Proxy(first, {
    get(_target, property) {
      const value = Reflect.get(current, property, current) as unknown;
      if (typeof value !== 'function') return value;
      if (typeof property !== 'string' || !gated.has(property)) return (value as (...a: unknown[]) => unknown).bind(current);
      return async (...args: unknown[]) => {
        await gate.acquire();
        let deadline: NodeJS.Timeout | undefined;
        try {
          return await Promise.race([
            (value as (...a: unknown[]) => Promise<unknown>).apply(current, args),
            new Promise<never>((_, reject) => {
              deadline = setTimeout(() => reject(new PoolCallTimeoutError(limits.callMs)), limits.callMs);
            }),
          ]);
        } finally {
          clearTimeout(deadline);
          gate.release();
        }
      };
    },
  });
  return {
    pool,
    close: async () => {
      clearInterval(timer);
      await current.end();
    },
  };
}
