import type { Db } from './pool.js';

const maxTries = 3;

/**
 * The answer of `attempt`, tried again while it gives none because the data moved under it (a batch
 * landed between what it looked at and what it read). Batches landing one after another could move it
 * every time: the third try is told it is the last, and gives its answer as it is.
 */
export async function retryWhileMoved<T>(attempt: (last: boolean) => Promise<T | undefined>): Promise<T> {
  for (let tries = 1; ; tries++) {
    const answer = await attempt(tries === maxTries);
    if (answer !== undefined) return answer;
  }
}

/**
 * A read of the rollups that holds every reading committed before it. On timescale a backfill is
 * committed before its rollups are refreshed, and leaves a row in rollup_backlog until they are: `read`
 * says whether its own snapshot saw such a row for its stations (`waiting`, one indexed lookup of an
 * almost always empty table), and is then read again after a refresh, on whichever instance the backfill
 * was written. Its live readings would otherwise be counted and its older ones not. Nothing to wait for
 * on portable, whose rollups are exact in the writing transaction.
 */
export function readCurrent<T extends { waiting: boolean }>(db: Db, read: () => Promise<T>): Promise<T> {
  return retryWhileMoved(async (last) => {
    const result = await read();
    if (!result.waiting || last) return result;
    await db.rollups.refresh();
    return undefined;
  });
}
