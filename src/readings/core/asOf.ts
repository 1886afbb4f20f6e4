import type { Context } from 'koa';
import { sql } from 'slonik';
import type { Db } from '../../db/pool.js';
import type { ReadPools } from '../../db/replicas.js';
import { invalidParameters } from '../../http/problem.js';
import { z } from '../../http/zod.js';
import { finerThanMillisecond, finerThanMillisecondReason } from './millisecond.js';
import { lockStationExclusively } from './stationLock.js';

/** An instant a read is answered as of (to the millisecond): what the archive held then. */
export type AsOf = { iso: string; at: Date };

export const asOfSchema = z
  .string()
  .datetime({ offset: true, message: 'must be an ISO 8601 instant, such as 2026-03-01T12:00:00Z' })
  // Readings record when they entered the archive to the microsecond: a truncated instant could select others.
  .refine((text) => !finerThanMillisecond(text), finerThanMillisecondReason)
  .optional()
  // No example: the docs page would fill it in, and "Try it out" would then read the archive of another day.
  .openapi({
    description: 'Answer as the archive stood at this instant (ISO 8601, to the millisecond: a digit other than zero below it is a 400; UTC unless it carries an offset): the readings recorded by then and not deleted by then, each with the quality flag in force then, aggregates included. Not in the future (400); before the first reading, the answer is empty. Also taken as an `Accept-Datetime` header (RFC 7089); the answer then names it in `Memento-Datetime`.',
  });

/** The response header of an answer as of an instant, for the document. */
export const mementoHeader = { 'Memento-Datetime': 'With as_of or Accept-Datetime: the instant the answer is as of (RFC 7089), to the second' };

/** The request header of RFC 7089, documented beside the query parameters. */
export const acceptDatetimeHeader = z.object({
  'accept-datetime': z.string().optional().openapi({
    description: 'An HTTP-date (RFC 7089): as `as_of`, which wins when both are given',
  }),
});

// RFC 9110's IMF-fixdate, the form RFC 7089 names for Accept-Datetime.
const httpDate = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/**
 * The instant a read is as of: `as_of` (already a valid ISO 8601 instant), else the request's
 * Accept-Datetime; undefined for the archive as it stands. An instant in the future is a 400 naming
 * where it came from. Every answer that may depend on it varies on the header; one that does is
 * marked with Memento-Datetime (to the second, as an HTTP-date can say).
 */
export function readAsOf(ctx: Context, given: string | undefined): AsOf | undefined {
  ctx.vary('Accept-Datetime');
  const header = ctx.get('Accept-Datetime').trim();
  const param = given !== undefined ? 'as_of' : 'Accept-Datetime';
  if (given === undefined && header === '') return undefined;
  if (given === undefined && !httpDate.test(header)) {
    throw invalidParameters([{ param, message: 'must be an HTTP-date, such as Sun, 01 Mar 2026 12:00:00 GMT' }]);
  }
  const asOf = instantAsOf(param, given ?? header);
  ctx.set('Memento-Datetime', asOf.at.toUTCString());
  return asOf;
}

/** An instant given as `param` (any form Date reads; checked already), to the millisecond; a 400 in the future. */
export function instantAsOf(param: string, text: string): AsOf {
  const at = new Date(text);
  if (Number.isNaN(at.getTime())) throw invalidParameters([{ param, message: 'must be an instant that exists' }]);
  if (at.getTime() > Date.now()) throw invalidParameters([{ param, message: 'must not be in the future' }]);
  return { iso: at.toISOString(), at };
}

// A batch holds its station's lock from before the instant it records until it commits, for far less than this.
const settleWindowMs = 60_000;

/**
 * Where a read as of `asOf` runs: on a current replica as any heavy read, but for an instant in the last
 * minute, which a batch still open might yet be recorded at. Its stations' locks are then taken alone
 * for a moment first (every batch recorded by the instant has then committed), and the read runs on the
 * primary, which a replica may not have caught up with.
 */
export async function asOfPools(db: Db, asOf: AsOf | undefined, stationIds: readonly string[]): Promise<ReadPools | undefined> {
  if (!asOf || Date.now() - asOf.at.getTime() > settleWindowMs) return undefined;
  await settleStations(db, stationIds);
  return { readPool: db.readPool, streamPool: db.streamPool };
}

/**
 * Takes the stations' locks alone for a moment (in one order, so that two callers never wait on each
 * other): every batch of theirs recorded before then has committed, and one recorded later cannot be
 * seen as of an instant before it. Returns that moment, to the millisecond (the database's clock), which
 * a new snapshot is as of.
 */
export async function settleStations(db: Db, stationIds: readonly string[]): Promise<AsOf> {
  const at = await db.pool.transaction(async (tx) => {
    for (const id of [...stationIds].sort()) await lockStationExclusively(tx, id);
    return tx.oneFirst(sql.type(z.object({ at: z.string() }))`
      select to_char(date_trunc('milliseconds', clock_timestamp()) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at`);
  });
  return { iso: at, at: new Date(at) };
}

/** Runs `read` where asOfPools says: on the pools given, else on a current replica or the primary. */
export async function readAsOfOn<T>(db: Db, pools: ReadPools | undefined, read: (pools: ReadPools) => Promise<T>): Promise<T> {
  return pools ? read(pools) : db.replicas.prefer(read);
}
