import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Db } from '../db/pool.js';

/** What every route needs, created once by main and passed down. */
export type Deps = {
  config: Config;
  db: Db;
  log: Logger;
};
