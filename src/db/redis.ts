import { Redis } from 'ioredis';

/**
 * A Redis client that fails fast while the server is away (no offline queue, one try per command) and
 * reconnects in the background, so a Redis outage never makes a request wait.
 */
export function createRedis(url: string): Redis {
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
