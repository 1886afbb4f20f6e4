import type { Engine } from '../../src/config.js';
import { parseConfig, type Config } from '../../src/config.js';
import { createDb, poolOptionsFrom, type Db } from '../../src/db/pool.js';
import { createApp } from '../../src/app.js';
import { listen } from '../../src/http/server.js';
import { pino } from 'pino';
import { connectRedis } from '../../src/db/redis.js';
import { testServer } from './server.js';
import { spawnServe, type ServeProcess } from './cli.js';

export type TestEnv = {
  engine: Engine;
  databaseUrl: string;
  config: Config;
  db: Db;
  /** Where the app listens, e.g. http://127.0.0.1:43121 */
  origin: string;
  get: (path: string, init?: RequestInit) => Promise<Response>;
  // Response bodies are asserted field by field; `any` keeps those assertions readable.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  getJson: (path: string) => Promise<{ status: number; headers: Headers; body: any }>;
  close: () => Promise<void>;
};

/** A fresh database for `engine` and the real HTTP app on a free port, as `envmon serve` would run it. */
export async function startTestApp(
  engine: Engine,
  /** Settings beside the database's, or made from its URL (a replica of it). */
  settings: Record<string, string> | ((databaseUrl: string) => Record<string, string>) = {},
  /** Adjusts the fresh database and returns the URL the app is to use (which may carry its own options). */
  prepare?: (databaseUrl: string) => Promise<string>,
): Promise<TestEnv> {
  const freshUrl = await testServer().createDatabase(engine);
  const databaseUrl = prepare ? await prepare(freshUrl) : freshUrl;
  const config = parseConfig({
    DATABASE_URL: databaseUrl,
    PUBLIC_URL: 'http://envmon.test',
    RATE_LIMIT_PER_MINUTE: '0',
    LOG_LEVEL: 'silent',
    ...(typeof settings === 'function' ? settings(databaseUrl) : settings),
  });
  const log = pino({ level: config.logLevel });
  const db = await createDb(databaseUrl, engine, poolOptionsFrom(config, log));
  // As `envmon serve` does.
  db.rollups.startHealing(config.rollupHealSeconds * 1000);
  const redis = config.redisUrl ? await connectRedis(config.redisUrl) : undefined;
  const { app, live } = createApp({ config, db, log, redis });
  const running = await listen(app, 0, '127.0.0.1');
  const get = (path: string, init?: RequestInit) => fetch(`${running.url}${path}`, init);
  return {
    engine,
    databaseUrl,
    config,
    db,
    origin: running.url,
    get,
    getJson: async (path) => {
      const response = await get(path);
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
    },
    close: async () => {
      await live.close();
      await running.close();
      redis?.disconnect();
      await db.close();
      await testServer().dropDatabase(freshUrl);
    },
  };
}

/** Defines `title` once per engine the server offers, each with its own fresh database and app. */
export function describeEngines(
  title: string,
  define: (env: () => TestEnv) => void,
  settings: Record<string, string> = {},
  prepare?: (databaseUrl: string) => Promise<string>,
): void {
  for (const engine of testServer().engines) {
    describe(`${title} [${engine}]`, function () {
      let env: TestEnv | undefined;
      before(async function () {
        env = await startTestApp(engine, settings, prepare);
      });
      after(async function () {
        await env?.close();
      });
      define(() => {
        if (!env) throw new Error('test app not started');
        return env;
      });
    });
  }
}

/**
 * A second `envmon serve` process on the suite's database, for the describe block that calls this:
 * started before its tests, stopped after them. Gives the running process.
 */
export function anotherInstance(env: () => TestEnv): () => ServeProcess {
  let other: ServeProcess | undefined;
  before(async function () {
    this.timeout(30_000);
    other = await spawnServe({ DATABASE_URL: env().databaseUrl, RATE_LIMIT_PER_MINUTE: '0' });
  });
  after(async () => {
    await other?.stop();
  });
  return () => other!;
}
