import type { Context } from 'koa';
import { serviceUnavailable, tooManyRequests } from './problem.js';

/**
 * What a request costs the service, decided from the route it matches and its query (docs/running.md,
 * "What a request costs"):
 * - `cheap`: answered from the rollups, a cache, an index or a stored file; no slot.
 * - `computed`: read from the readings themselves, in proportion to the range asked (percentiles, qc=pass,
 *   zones whose hours cut UTC hours, profiles read from the readings, quality reports, answers as of an
 *   instant, flagged historical windows).
 * Downloads, live streams and snapshots' making keep the slots of their own kinds.
 */
export type CostClass = 'cheap' | 'computed';

/** Limits of one class: slots per client address, slots in all, and how long a request may wait for one. */
export type CostLimits = { perClient: number; total: number; waitMs: number };

/** Takes a slot of the request's class, held until its answer closes; throws the problem that refuses it. */
export type CostSlots = (ctx: Context, costClass: CostClass) => Promise<void>;

/**
 * One app's slots of the computed class. A client address holding `perClient` of them is over its share:
 * its next computed request is a 429 at once, so that it queues behind nobody. Otherwise a request takes a
 * free slot, or waits for one in order of arrival for at most `waitMs`, then is a 503; every client has at
 * most `perClient` requests holding or waiting, so one address cannot fill the queue.
 */
export function createCostSlots(limits: CostLimits): CostSlots {
  const byClient = new Map<string, number>();
  const waiting: (() => void)[] = [];
  let taken = 0;
  const retryAfter = Math.max(1, Math.ceil(limits.waitMs / 1000));

  const release = (client: string) => {
    const left = (byClient.get(client) ?? 1) - 1;
    if (left > 0) byClient.set(client, left);
    else byClient.delete(client);
    const next = waiting.shift();
    if (next) next();
    else taken--;
  };

  return async (ctx, costClass) => {
    if (costClass === 'cheap') return;
    const client = ctx.ip;
    const mine = byClient.get(client) ?? 0;
    if (mine >= limits.perClient) {
      throw tooManyRequests(`at most ${limits.perClient} computed reads (percentiles, qc=pass, as_of, a zone that cuts UTC hours, profiles, quality reports) at a time per client; wait for one to finish`, retryAfter);
    }
    byClient.set(client, mine + 1);
    if (taken < limits.total) taken++;
    else {
      // A slot passes straight to the first waiter when it is released, so `taken` stays as it was.
      const granted = await new Promise<boolean>((resolve) => {
        const grant = () => { clearTimeout(timer); resolve(true); };
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(grant), 1);
          resolve(false);
        }, limits.waitMs);
        waiting.push(grant);
      });
      if (!granted) {
        const left = (byClient.get(client) ?? 1) - 1;
        if (left > 0) byClient.set(client, left);
        else byClient.delete(client);
        throw serviceUnavailable(`every one of the ${limits.total} slots for computed reads is taken; retry in ${retryAfter} s`, {}, retryAfter);
      }
    }
    // A client gone while it waited has its slot back at once.
    if (ctx.res.closed || ctx.res.destroyed) release(client);
    else ctx.res.once('close', () => release(client));
  };
}
