import type { Context } from 'koa';
import { serviceUnavailable, tooManyRequests } from './problem.js';

/**
 * What a request costs the service, decided from the route it matches and its query (docs/running.md,
 * "What a request costs"):
 * - `cheap`: answered from the rollups, a cache, an index or a stored file; no slot.
 * - `computed`: read from the readings themselves, in proportion to the range asked (percentiles, qc=pass,
 *   zones that cut UTC hours, profiles read from the readings, quality reports, answers as of an
 *   instant, flagged historical windows).
 * - `snapshot`: a snapshot made, or compared with today's answer: its whole answer made in memory, twice.
 * Downloads and live streams keep the slots of their own kinds.
 */
export type CostClass = 'cheap' | 'computed' | 'snapshot';

/**
 * Limits of one class: slots per client address, slots in all, how long a request may wait for one, what
 * the class is called, and what requests are in it (for a client refused its share).
 */
export type CostLimits = { perClient: number; total: number; waitMs: number; what: string; examples?: string };

/** Takes a slot of the request's class, held until its answer closes; throws the problem that refuses it. */
export type CostSlots = (ctx: Context, costClass: CostClass) => Promise<void>;

/** One app's slots of every class but the cheap one. */
export function createCostSlots(limits: Record<Exclude<CostClass, 'cheap'>, CostLimits>): CostSlots {
  const classes = { computed: slotsOf(limits.computed), snapshot: slotsOf(limits.snapshot) };
  return (ctx, costClass) => (costClass === 'cheap' ? Promise.resolve() : classes[costClass](ctx));
}

/**
 * One app's slots of one class. A client address holding `perClient` of them is over its share:
 * its next computed request is a 429 at once, so that it queues behind nobody. Otherwise a request takes a
 * free slot, or waits for one in order of arrival for at most `waitMs`, then is a 503; every client has at
 * most `perClient` requests holding or waiting, so one address cannot fill the queue.
 */
function slotsOf(limits: CostLimits): (ctx: Context) => Promise<void> {
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

  return async (ctx) => {
    const client = ctx.ip;
    const mine = byClient.get(client) ?? 0;
    if (mine >= limits.perClient) {
      throw tooManyRequests(`at most ${limits.perClient} ${limits.what}${limits.examples ? ` (${limits.examples})` : ''} at a time per client; wait for one to finish`, retryAfter);
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
        throw serviceUnavailable(`every one of the ${limits.total} slots for ${limits.what} is taken; retry in ${retryAfter} s`, {}, retryAfter);
      }
    }
    // A client gone while it waited has its slot back at once.
    if (ctx.res.closed || ctx.res.destroyed) release(client);
    else ctx.res.once('close', () => release(client));
  };
}
