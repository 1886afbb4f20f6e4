import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/pool.js';
import { createApp } from '../app.js';
import { listen } from '../http/server.js';
import { connectRedis } from '../db/redis.js';
import { startDemoFeed } from '../readings/demo/feed.js';
import { warmUpReads } from './warmUp.js';
import { isEmpty, loadDemo } from './demo.js';
import { parseCommandArgs } from './args.js';

/**
 * `envmon serve [--demo]`: serves until SIGINT/SIGTERM, then stops accepting, lets in-flight requests
 * finish (ingests commit or roll back, downloads end) for up to DRAIN_SECONDS and resolves so that main
 * closes the database and exits 0; past DRAIN_SECONDS it cuts them and exits 1.
 */
export async function serveCommand(config: Config, db: Db, log: Logger, args: string[]): Promise<void> {
  const { values } = parseCommandArgs(args, { demo: { type: 'boolean' } }, []);
  if (values.demo && (await isEmpty(db))) {
    const started = Date.now();
    const loaded = await loadDemo(db);
    log.info({ ...loaded, ms: Date.now() - started }, 'demo data loaded');
  }
  // At start and every ROLLUP_HEAL_SECONDS: whatever a failed refresh (here, in a CLI run, in a process
  // killed after its commit) left stale below the horizon is refreshed.
  db.rollups.startHealing(config.rollupHealSeconds * 1000);
  // Connections stay open (the pool has no idle timeout), so warming them once keeps first requests fast.
  await warmUpReads(db, config.poolSize).catch((error: unknown) => log.warn({ err: error }, 'warming up the read queries failed'));
  const redis = config.redisUrl ? await connectRedis(config.redisUrl) : undefined;
  const { app, live } = createApp({ config, db, log, redis });
  const running = await listen(app, config.port, config.host);
  // The demo stays live while a newcomer looks: readings every minute through the real ingest route.
  const feed = values.demo ? await startDemoFeed({ db: db.pool, origin: running.url, log }) : undefined;
  log.info({ url: `${running.url}/api/v1/`, engine: db.engine }, 'serving');
  console.error(`envmon serving ${config.baseUrl}/ on ${running.url} (engine: ${db.engine})`);
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, 'draining in-flight requests');
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      // A second signal, or a drain that outlives DRAIN_SECONDS, ends the process the hard way, with exit
      // code 1: what was still in flight (a download being read slowly) is cut. A drain that finishes exits 0.
      const force = setTimeout(() => {
        log.warn({ drain_seconds: config.drainSeconds }, 'requests still in flight after the drain: cut');
        process.exit(1);
      }, config.drainSeconds * 1000);
      force.unref();
      process.once('SIGINT', () => process.exit(1));
      process.once('SIGTERM', () => process.exit(1));
      // The feed first: its last post is a request like any other, and its keys go with it. Live streams
      // never end by themselves: they are ended, so that the drain can finish.
      Promise.allSettled([feed?.stop(), live.close()]).then(() => Promise.allSettled([running.close()])).then(() => {
        redis?.disconnect();
        resolve();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
