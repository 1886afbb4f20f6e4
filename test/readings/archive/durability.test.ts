import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { admin } from '../../helpers/database.js';
import { describeEngines, startTestApp, type TestEnv } from '../../helpers/app.js';
import { lines, runCli, runCommand, spawnServe } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { testServer } from '../../helpers/server.js';
import { useStandby } from '../../helpers/standby.js';

const day = 86_400_000;
const readings = (count: number, start: number, offset = 0) =>
  Array.from({ length: count }, (_, i) => ({ timestamp: new Date(start + i * 60_000).toISOString(), temperature_c: offset + i / 4, pm2_5: (i * 7) % 31 }));

type Record = { id: string; formats: { csv: { url: string; sha256: string }; parquet: { url: string; sha256: string } } };

async function keep(env: TestEnv, url: string): Promise<Record> {
  const response = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
  assert.equal(response.status, 201);
  return await response.json() as Record;
}

const fileOf = async (origin: string, url: string) => Buffer.from(await (await fetch(`${origin}${new URL(url).pathname}`)).arrayBuffer());

/** The PostgreSQL client tools of the test server's version, or null when this machine has none. */
async function clientTools(adminUrl: string): Promise<string | null> {
  const version = await admin(adminUrl, async (c) => Number((await c.query<{ v: string }>("select current_setting('server_version_num') as v")).rows[0]!.v));
  const dir = `/usr/lib/postgresql/${Math.floor(version / 10_000)}/bin`;
  return existsSync(path.join(dir, 'pg_dump')) ? dir : null;
}

describeEngines('snapshots kept by the operator', (env) => {
  const station = 'keep-01';
  const start = Math.floor((Date.now() - 5 * day) / day) * day;
  let record: Record;

  before(async () => {
    const key = await stationWithKey(env(), station);
    assert.equal((await postBatch(env(), key, { station_id: station, readings: readings(600, start) })).status, 201);
    record = await keep(env(), `/api/v1/data/download/?station=${station}&columns=all`);
  });

  it('lists and verifies snapshots, and never sends a file that is not made as recorded', async () => {
    const settings = { DATABASE_URL: env().databaseUrl, PUBLIC_URL: 'http://envmon.test' };
    const listed = await runCli(['snapshots', 'list'], settings);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(lines(listed.stdout).some((line) => line.startsWith(`${record.id}\t`) && line.includes('600 rows')), listed.stdout);
    const verified = await runCli(['snapshots', 'verify', record.id], settings);
    assert.equal(verified.code, 0, verified.stderr);
    assert.match(verified.stdout, new RegExp(`${record.id}\tok`));
    // A snapshot whose recorded digest no longer matches (as after an upgrade that changed the bytes).
    const altered = await keep(env(), `/api/v1/data/download/?station=${station}&from_date=${new Date(start).toISOString().slice(0, 10)}`);
    await admin(env().databaseUrl, (c) => c.query(`update snapshots set files = jsonb_set(files, '{csv,sha256}', '"0000"') where id = $1`, [altered.id]));
    const failed = await runCli(['snapshots', 'verify'], settings);
    assert.equal(failed.code, 1);
    // Both the file made again and the one stored differ from the record.
    assert.match(failed.stdout, new RegExp(`${altered.id}\tDIFFERS \\(csv, stored csv\\)`));
    assert.match(failed.stdout, new RegExp(`${record.id}\tok`));
    // Without its stored bytes (as a snapshot made before they were kept), the file is made again, and
    // not sent, nor stored, as it does not match.
    await admin(env().databaseUrl, (c) => c.query('delete from snapshot_chunks where snapshot_id = $1', [altered.id]));
    const refused = await env().get(new URL(altered.formats.csv.url).pathname);
    assert.equal(refused.status, 500);
    assert.equal(refused.headers.get('content-type'), 'application/problem+json');
    assert.equal((await admin(env().databaseUrl, (c) => c.query('select 1 from snapshot_chunks where snapshot_id = $1 and format = $2', [altered.id, 'csv']))).rowCount, 0);
    await admin(env().databaseUrl, (c) => c.query('delete from snapshots where id = $1', [altered.id]));
  });

  it('gives the same bytes from a pg_dump of the database restored elsewhere', async function () {
    this.timeout(120_000);
    const tools = await clientTools(testServer().adminUrl);
    if (!tools) {
      console.log('      dump and restore: not tested here (no pg_dump of the server\'s version)');
      this.skip();
    }
    const dir = mkdtempSync(path.join(tmpdir(), 'envmon-dump-'));
    const restoredName = `envmon_restored_${env().engine}_${process.pid}`;
    const restoredUrl = Object.assign(new URL(env().databaseUrl), { pathname: `/${restoredName}` }).toString();
    try {
      const dumped = await runCommand(path.join(tools!, 'pg_dump'), ['-Fc', '-f', path.join(dir, 'envmon.dump'), '-d', env().databaseUrl]);
      assert.equal(dumped.code, 0, dumped.stderr);
      await admin(testServer().adminUrl, (c) => c.query(`create database ${restoredName}`));
      if (env().engine === 'timescale') {
        await admin(restoredUrl, async (c) => {
          await c.query('create extension timescaledb');
          await c.query('select timescaledb_pre_restore()');
        });
      }
      const restored = await runCommand(path.join(tools!, 'pg_restore'), ['-d', restoredUrl, '--no-owner', path.join(dir, 'envmon.dump')]);
      if (env().engine === 'timescale') await admin(restoredUrl, (c) => c.query('select timescaledb_post_restore()'));
      assert.ok(restored.code === 0 || !/error/i.test(restored.stderr.replace(/errors ignored on restore: 0/, '')), restored.stderr);
      const serve = await spawnServe({ DATABASE_URL: restoredUrl, PUBLIC_URL: 'http://envmon.test', RATE_LIMIT_PER_MINUTE: '0' });
      try {
        for (const format of ['csv', 'parquet'] as const) {
          assert.ok((await fileOf(serve.url, record.formats[format].url)).equals(await fileOf(env().origin, record.formats[format].url)), format);
        }
      } finally {
        await serve.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await admin(testServer().adminUrl, (c) => c.query(`drop database if exists ${restoredName} with (force)`));
    }
  });
});

describe('snapshots read from a replica', function () {
  const standby = useStandby('snapshots on a replica');

  for (const engine of testServer().engines) {
    describe(`a streaming replica [${engine}]`, function () {
      let env: TestEnv;
      before(async function () {
        this.timeout(60_000);
        env = await startTestApp(engine, (url) => ({ DATABASE_READ_URL: standby()!.urlOf(url), REPLICA_MAX_LAG_SECONDS: '30' }));
      });
      after(async function () {
        this.timeout(60_000);
        await standby()?.resumeReplay().catch(() => {});
        await env?.close();
      });

      it('gives the recorded bytes whether the replica has replayed the snapshot\'s instant or not', async function () {
        this.timeout(60_000);
        const station = `keep-rep-${engine}`;
        const key = await stationWithKey(env, station);
        const start = Math.floor((Date.now() - 3 * day) / day) * day;
        assert.equal((await postBatch(env, key, { station_id: station, readings: readings(300, start) })).status, 201);
        const first = await keep(env, `/api/v1/data/download/?station=${station}`);
        // Once the replica holds the snapshot's readings, its file is made there.
        const replica = new pg.Client({ connectionString: standby()!.urlOf(env.databaseUrl) });
        await replica.connect();
        try {
          const deadline = Date.now() + 20_000;
          while ((await replica.query('select 1 from snapshots where id = $1', [first.id])).rowCount === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        } finally {
          await replica.end();
        }
        assert.equal((await fileOf(env.origin, first.formats.csv.url)).toString('hex').length > 0, true);
        // The replica stops replaying; the primary takes a backfill and a new snapshot the replica lacks.
        await standby()!.pauseReplay();
        assert.equal((await postBatch(env, key, { station_id: station, readings: readings(100, start - day, 50) })).status, 201);
        const second = await keep(env, `/api/v1/data/download/?station=${station}`);
        for (const kept of [first, second]) {
          for (const format of ['csv', 'parquet'] as const) {
            const bytes = await fileOf(env.origin, kept.formats[format].url);
            assert.equal((await import('node:crypto')).createHash('sha256').update(bytes).digest('hex'), kept.formats[format].sha256, `${kept.id} ${format}`);
          }
        }
        await standby()!.resumeReplay();
      });
    });
  }
});
