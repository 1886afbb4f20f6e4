import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/pool.js';

/** What every route needs, created once by main and passed down. */
export type Deps = {
  config: Config;
  db: Db;
  log: Logger;
  /** Rate-limit counters shared by every instance; in memory when absent. */
  redis?: Redis;
};
