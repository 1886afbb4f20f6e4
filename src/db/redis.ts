import { Redis } from 'ioredis';

/**
 * A Redis client that fails fast while the server is away (no offline queue, one try per command) and
 * reconnects in the background, so a Redis outage never makes a request wait.
 */
function createRedis(url: string): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 1_000,
    commandTimeout: 500,
    retryStrategy: (times) => Math.min(times * 200, 2_000),
    lazyConnect: false,
  });
  // Connection errors are reported by the commands that fail; the client itself retries quietly.
  redis.on('error', () => {});
  return redis;
}

/**
 * A Redis client (createRedis), returned once its first connection is up, or has failed for `waitMs`:
 * commands are never queued while Redis is away, so a request served before the connection is up would
 * pass uncounted by the shared rate limit (an instance's first requests after every start).
 */
export async function connectRedis(url: string, waitMs = 2_000): Promise<Redis> {
  const redis = createRedis(url);
  if (redis.status !== 'ready') {
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, waitMs);
      redis.on('ready', done);
    });
  }
  return redis;
}
