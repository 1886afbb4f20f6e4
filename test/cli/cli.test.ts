import assert from 'node:assert/strict';
import net from 'node:net';
import { findStationByKey } from '../../src/stations/keys.js';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines } from '../helpers/app.js';
import { lines, runCli, spawnServe } from '../helpers/cli.js';
import { testServer } from '../helpers/server.js';
import { countReadings, makeReadings } from '../helpers/readings.js';

describe('envmon command: settings and usage errors', () => {
  const unreachable = { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/envmon' };

  it('rejects a bad setting with one line per setting and exit 2', async () => {
    const result = await runCli(['migrate'], { PORT: 'abc', DB_ENGINE: 'mysql', PUBLIC_URL: 'ftp://x', ...unreachable });
    assert.equal(result.code, 2);
    assert.deepEqual(lines(result.stderr), [
      'envmon: setting DB_ENGINE="mysql" is invalid: must be one of auto, timescale, portable',
      'setting PORT="abc" is invalid: must be a whole number from 0 to 65535',
      'setting PUBLIC_URL="ftp://x" is invalid: must start with http:// or https://',
    ]);
    assert.equal(result.stdout, '');
  });

  it('reports an unreachable database in one line and exits 1', async () => {
    const result = await runCli(['migrate'], unreachable);
    assert.equal(result.code, 1);
    assert.deepEqual(lines(result.stderr), ['envmon: cannot reach the database at 127.0.0.1:1/envmon: connect ECONNREFUSED 127.0.0.1:1']);
  });

  it('reports a database that does not exist in one line and exits 1', async () => {
    const missing = new URL(testServer().adminUrl);
    missing.pathname = '/envmon_no_such_database';
    const result = await runCli(['migrate'], { DATABASE_URL: missing.toString() });
    assert.equal(result.code, 1);
    assert.deepEqual(lines(result.stderr), [`envmon: the database ${missing.host}/envmon_no_such_database does not exist: create it, or set DATABASE_URL to one that does`]);
  });

  it('rejects an unknown command and an unknown flag', async () => {
    let result = await runCli(['frobnicate'], unreachable);
    assert.equal(result.code, 2);
    assert.deepEqual(lines(result.stderr), [`envmon: unknown command 'frobnicate' (run 'envmon help' for usage)`]);
    result = await runCli(['help'], {});
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^usage: envmon <command>/);
  });
});

describeEngines('envmon command', (env) => {
  const settings = () => ({ DATABASE_URL: env().databaseUrl });

  it('migrate is a no-op on a current database and names the engine', async () => {
    const result = await runCli(['migrate'], settings());
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(lines(result.stdout), [`database is current (engine: ${env().engine})`]);
  });

  it('says in one line, exit 1, when the content file cannot be read', async () => {
    const result = await runCli(['import', '/nonexistent/content.json'], settings());
    assert.equal(result.code, 1);
    assert.deepEqual(lines(result.stderr), ['envmon: cannot read the content file /nonexistent/content.json: no such file']);
  });

  it('says in one line, exit 1, when its port is taken', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      const result = await runCli(['serve'], { ...settings(), PORT: String(port), LOG_LEVEL: 'silent' });
      assert.equal(result.code, 1);
      assert.deepEqual(lines(result.stderr), [`envmon: port ${port} on 127.0.0.1 is in use (another envmon serving?); stop it or set PORT`]);
    } finally {
      taken.close();
    }
  });

    it('refuses a DB_ENGINE that contradicts the database in one line', async () => {
    const other = env().engine === 'portable' ? 'timescale' : 'portable';
    const result = await runCli(['migrate'], { ...settings(), DB_ENGINE: other });
    assert.equal(result.code, 1);
    assert.deepEqual(lines(result.stderr), [
      `envmon: DB_ENGINE=${other} contradicts this database, which was created with the ${env().engine} engine`,
    ]);
  });

  it('adds a station, issues, lists and revokes keys', async () => {
    const add = await runCli(
      ['stations', 'add', 'cli-01', '--name', 'CLI Station', '--location-name', 'Roof', '--altitude', '210', '--lat', '45.1', '--lon', '5.7'],
      settings(),
    );
    assert.equal(add.code, 0, add.stderr);
    assert.deepEqual(lines(add.stdout), ['station cli-01 saved (CLI Station, active, a reading every 60 s)']);

    const first = await runCli(['keys', 'issue', 'cli-01', '--label', 'roof logger'], settings());
    const second = await runCli(['keys', 'issue', 'cli-01'], settings());
    assert.equal(first.code, 0, first.stderr);
    const key1 = lines(first.stdout).at(-1)!;
    const key2 = lines(second.stdout).at(-1)!;
    assert.match(key1, /^em_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    assert.notEqual(key1, key2);
    assert.equal(await findStationByKey(env().db.pool, key1), 'cli-01');
    assert.equal(await findStationByKey(env().db.pool, key2), 'cli-01');

    const keyId = key1.split('_')[1]!;
    const listed = await runCli(['keys', 'list', 'cli-01'], settings());
    assert.equal(listed.code, 0);
    assert.equal(lines(listed.stdout).length, 2);
    assert.ok(!listed.stdout.includes(key1.slice(`em_${keyId}_`.length)), 'the secret is never listed');
    assert.match(listed.stdout, new RegExp(`^${keyId}\tactive\tcreated [^\t]+\troof logger$`, 'm'));

    const revoked = await runCli(['keys', 'revoke', keyId], settings());
    assert.deepEqual(lines(revoked.stdout), [`key ${keyId} revoked`]);
    assert.equal(await findStationByKey(env().db.pool, key1), null);
    assert.equal(await findStationByKey(env().db.pool, key2), 'cli-01', 'the other key still works');
    assert.match((await runCli(['keys', 'list', 'cli-01'], settings())).stdout, new RegExp(`^${keyId}\trevoked `, 'm'));
  });

  it('names what is wrong in a stations or keys command', async () => {
    const cases: [string[], string][] = [
      [['stations', 'add', 'x-1', '--name', 'X', '--location-name', 'L', '--altitude', 'high'], "--altitude must be a number, got 'high'"],
      [['stations', 'add', 'x-1', '--name', 'X', '--location-name', 'L', '--altitude', '1', '--lat', '95', '--lon', '1'], '--lat Number must be less than or equal to 90'],
      [['stations', 'add', 'x-1', '--name', 'X', '--location-name', 'L', '--altitude', '1', '--colour', 'red'], "Unknown option '--colour'"],
      [['stations', 'add', 'x-1', '--location-name', 'L', '--altitude', '1'], '--name is required'],
      [['keys', 'issue', 'nope'], "station 'nope' does not exist; add it with 'envmon stations add'"],
      [['keys', 'revoke', 'ffffffffffff'], "no key with id 'ffffffffffff'"],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, settings());
      assert.equal(result.code, 2, args.join(' '));
      const [line, ...rest] = lines(result.stderr);
      assert.deepEqual(rest, [], 'one line');
      assert.ok(line!.startsWith(`envmon: ${message}`), `${args.join(' ')}: ${line}`);
    }
  });

  it('flags a time range and reports how many readings changed', async () => {
    const { db } = env();
    await runCli(['stations', 'add', 'cli-flag', '--name', 'F', '--location-name', 'L', '--altitude', '1'], settings());
    await storeReadings(db, 'cli-flag', makeReadings(1440, '2026-03-10T00:00:00Z', 1).map((r) => ({ ...r, quality_flag: 'ok' as const })));
    const result = await runCli(['flag', '--station', 'cli-flag', '--from', '2026-03-10T06:00', '--to', '2026-03-10', '--flag', 'invalid'], settings());
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(lines(result.stdout), [
      '1080 readings of cli-flag flagged invalid between 2026-03-10T06:00:00.000Z and 2026-03-10T23:59:59.999Z',
    ]);
    const bad = await runCli(['flag', '--station', 'cli-flag', '--from', '2026-03-10', '--to', '2026-03-11', '--flag', 'bad'], settings());
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^envmon: --flag must be one of ok, suspect, invalid/);
  });

  it('serve answers, and on SIGTERM finishes the request in flight and exits 0', async function () {
    this.timeout(60_000);
    const serve = await spawnServe(settings());
    const { url } = serve;
    const inFlight = fetch(`${url}/api/v1/stations/`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const stopped = serve.stop();
    const response = await inFlight;
    assert.equal(response.status, 200);
    await response.json();
    assert.equal(await stopped, 0, serve.stderr());
  });
});

describeEngines('envmon demo', (env) => {
  it('loads demo stations and 30 days of one-minute readings into an empty database, once', async function () {
    this.timeout(180_000);
    const settings = { DATABASE_URL: env().databaseUrl };
    const result = await runCli(['demo'], settings);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(lines(result.stdout), ['demo loaded: 4 stations, 129600 readings']);
    assert.equal(await countReadings(env().db, 'alpine-01'), 43_200);
    const health = await env().getJson('/api/v1/health/');
    assert.equal(health.body.ok, true);
    const stats = await env().getJson('/api/v1/stats/');
    assert.deepEqual(stats.body.content, { notes: 6, publications: 6, team: 5, research: 3, education: 3, instruments: 4 });
    assert.equal(stats.body.readings.total, 129_600);
    const again = await runCli(['demo'], settings);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /^envmon: the database already holds stations; demo data loads only into an empty database/);
  });
});
