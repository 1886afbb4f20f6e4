import type { Logger } from 'pino';
import type { Db } from '../db/pool.js';
import { materializeRollups } from './rollups.js';

const everyMs = 5 * 60_000;

/**
 * On timescale, materialises complete buckets at start and every five minutes, in place of the refresh
 * policies (which cannot run on every server). Returns a stop function that waits for a run in progress.
 */
export function startMaterializer(db: Db, log: Logger): () => Promise<void> {
  if (db.engine !== 'timescale') return async () => {};
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = running.then(async () => {
      const started = Date.now();
      try {
        await materializeRollups(db);
        log.debug({ ms: Date.now() - started }, 'rollups materialised');
      } catch (error) {
        log.warn({ err: error }, 'materialising rollups failed; reads stay exact through real-time aggregation');
      }
    });
  };
  run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
