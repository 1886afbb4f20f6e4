import assert from 'node:assert/strict';
import pg from 'pg';
import { spawnServe } from '../helpers/cli.js';
import { testServer } from '../helpers/server.js';

describe('envmon serve starting while the database ends its connections', () => {
  for (const engine of ['portable', 'timescale'] as const) {
    it(`starts again, with one line per retry, and serves [${engine}]`, async function () {
      this.timeout(120_000);
      if (!testServer().engines.includes(engine)) this.skip();
      const url = await testServer().createEmptyDatabase();
      const database = new URL(url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: testServer().adminUrl });
      await admin.connect();
      // The first backends serve opens on the new database are terminated as soon as they appear.
      let terminated = 0;
      let stop = false;
      const terminator = (async () => {
        while (terminated === 0 && !stop) {
          const { rows } = await admin.query<{ n: number }>(
            'select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [database]);
          terminated += rows[0]!.n;
        }
      })();
      try {
        const serve = await spawnServe({ DATABASE_URL: url, DB_ENGINE: engine, LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' });
        try {
          await terminator;
          const retries = serve.stderr().split('\n').filter((line) => line.includes('during start-up; starting again'));
          assert.ok(terminated > 0 && retries.length >= 1, `${terminated} backends terminated; stderr: ${serve.stderr()}`);
          for (const line of retries) assert.equal((JSON.parse(line) as { level: number }).level, 40, line);
          assert.equal((await fetch(`${serve.url}/api/v1/`)).status, 200);
          const migrated = new pg.Client({ connectionString: url });
          await migrated.connect();
          const { rows } = await migrated.query<{ value: string }>(`select value from envmon_settings where key = 'engine'`);
          await migrated.end();
          assert.deepEqual(rows, [{ value: engine }]);
        } finally {
          assert.equal(await serve.stop(), 0);
        }
      } finally {
        stop = true;
        await terminator.catch(() => {});
        await admin.end();
        await testServer().dropDatabase(url);
      }
    });
  }
});
