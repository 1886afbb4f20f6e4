import type { Context } from 'koa';
import type { CostClass } from '../../http/costSlots.js';

/**
 * The cost of a read of the readings (costSlots.ts): computed when it is summed or flagged from the
 * readings themselves (`fromReadings`, which the endpoint decides from its query), and always when it is
 * answered as of an instant, by `as_of` or an `Accept-Datetime` header; cheap otherwise.
 */
export function readCost(query: { as_of?: string }, ctx: Context, fromReadings = false): CostClass {
  return fromReadings || query.as_of !== undefined || ctx.get('accept-datetime') !== '' ? 'computed' : 'cheap';
}
