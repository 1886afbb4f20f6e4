import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envmonBin, lines, runCli, runCommand, spawnServe, type ServeProcess } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';

// The README's path for a newcomer, on the embedded PostgreSQL as `make start` runs it: the service
// with its demo, then, in another terminal, a key for a demo station, a reading posted with curl, and
// the reading in latest and the widget. Engine-independent: the embedded server is plain PostgreSQL.

const postmasterPid = (dataDir: string): number | undefined => {
  const file = path.join(dataDir, 'postgres', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
};

const alive = (pid: number | undefined) => {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('a newcomer: make start, then a key, a reading and the chart from another terminal', function () {
  this.timeout(180_000);
  let dataDir: string;
  let settings: Record<string, string>;
  let serve: ServeProcess | undefined;

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'envmon-newcomer-'));
    // The embedded server runs as the postgres user when the tests run as root.
    chmodSync(dataDir, 0o755);
    settings = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()), RATE_LIMIT_PER_MINUTE: '0' };
  });
  after(async () => {
    await serve?.stop();
    const pid = postmasterPid(dataDir);
    if (alive(pid)) process.kill(pid!, 'SIGINT');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('issues a key beside the running service, takes a reading posted with curl, and shows it', async () => {
    serve = await spawnServe(settings, ['--demo']);
    const server = postmasterPid(dataDir);
    assert.ok(alive(server), 'serve started the embedded PostgreSQL');

    const issued = await runCli(['keys', 'issue', 'alpine-01'], settings);
    assert.equal(issued.code, 0, issued.stderr);
    const key = lines(issued.stdout).at(-1)!;
    assert.match(key, /^em_[0-9a-f]{12}_[A-Za-z0-9_-]{43}$/);
    assert.equal(postmasterPid(dataDir), server, 'the command used the running server and left it running');
    const listed = await runCli(['keys', 'list', 'alpine-01'], settings);
    assert.match(listed.stdout, /\tactive\tcreated [^\t]+\tenvmon demo feed$/m, 'the live demo feed posts with its own key');

    const timestamp = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 30_000).toISOString();
    const posted = await runCommand('curl', [
      '-sS', '-X', 'POST', `${serve.url}/api/v1/ingest/environmental/`,
      '-H', `Authorization: Token ${key}`, '-H', 'Content-Type: application/json',
      '-d', JSON.stringify({ station_id: 'alpine-01', readings: [{ timestamp, temperature_c: 4.2, humidity_rh: 71 }] }),
    ]);
    assert.equal(posted.code, 0, posted.stderr);
    assert.deepEqual(JSON.parse(posted.stdout), { accepted: 1, duplicates: 0, errors: 0, error_details: [] });

    const latest = await (await fetch(`${serve.url}/api/v1/data/latest/?station=alpine-01`)).json() as { timestamp: string; temperature_c: number };
    assert.equal(latest.timestamp, timestamp);
    assert.equal(latest.temperature_c, 4.2);
    const widget = await fetch(`${serve.url}/embed/station/alpine-01/`);
    assert.equal(widget.status, 200);
    assert.match(await widget.text(), /Col du Lautaret Alpine Station/);

    assert.equal(await serve.stop(), 0, serve.stderr());
    serve = undefined;
    assert.equal(alive(server), false, 'the server stopped with the service that started it');
  });

  it('a command after the service was killed stops the server it left behind and works', async () => {
    serve = await spawnServe(settings);
    const server = postmasterPid(dataDir);
    serve.child.kill('SIGKILL');
    await serve.stop();
    serve = undefined;
    assert.ok(alive(server), 'a killed service leaves its PostgreSQL running');
    const listed = await runCli(['keys', 'list', 'alpine-01'], settings);
    assert.equal(listed.code, 0, listed.stderr);
    assert.equal(lines(listed.stdout).length, 1, 'the key issued above; the demo feed deleted its own when serve stopped');
    assert.equal(alive(server), false, 'the orphan was stopped');
    assert.equal(alive(postmasterPid(dataDir)), false, 'and the command stopped the server it started');
  });

  it('starts its PostgreSQL again when it is killed under the service, goes on serving and still stops cleanly', async () => {
    serve = await spawnServe(settings);
    const killed = postmasterPid(dataDir);
    assert.ok(alive(killed));
    process.kill(killed!, 'SIGKILL');
    // Requests fail while it is down (a 503 each, never the process); then it is back on the same data.
    const deadline = Date.now() + 60_000;
    let status = 0;
    let restarted = postmasterPid(dataDir);
    while (Date.now() < deadline) {
      status = (await fetch(`${serve.url}/api/v1/data/latest/?station=alpine-01`)).status;
      assert.ok(status === 200 || status === 503, `while the database is down: ${status} ${serve.stderr()}`);
      restarted = postmasterPid(dataDir);
      if (status === 200 && restarted !== killed && alive(restarted)) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.equal(status, 200, `the service answers from its database again: ${serve.stderr()}`);
    assert.ok(restarted !== killed && alive(restarted), 'a new server on the same directory');

    const issued = await runCli(['keys', 'issue', 'alpine-01'], settings);
    assert.equal(issued.code, 0, issued.stderr);
    const timestamp = new Date(Math.floor(Date.now() / 60_000) * 60_000 + 45_000).toISOString();
    const posted = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
      method: 'POST',
      headers: { Authorization: `Token ${lines(issued.stdout).at(-1)!}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ station_id: 'alpine-01', readings: [{ timestamp, temperature_c: -3.5 }] }),
    });
    assert.equal(posted.status, 201, await posted.text());
    const latest = await (await fetch(`${serve.url}/api/v1/data/latest/?station=alpine-01`)).json() as { timestamp: string; temperature_c: number };
    assert.deepEqual([latest.timestamp, latest.temperature_c], [timestamp, -3.5]);

    assert.equal(await serve.stop(), 0, serve.stderr());
    serve = undefined;
    assert.equal(alive(restarted), false, 'the restarted server stopped with the service');
  });

  it('on Ctrl-C in its terminal drains first and stops its PostgreSQL last, in a process group the terminal does not signal', async () => {
    const logFile = path.join(dataDir, 'postgres.log');
    const before = existsSync(logFile) ? readFileSync(logFile, 'utf8').length : 0;
    // A terminal sends Ctrl-C's SIGINT to every process of its foreground group: serve leads a group of its
    // own here, as under a shell, and the whole group is signalled.
    const child = spawn(process.execPath, [envmonBin, 'serve'], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'silent', PORT: '0', ...settings }, stdio: ['ignore', 'ignore', 'pipe'], detached: true,
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    for (let i = 0; i < 600 && !stderr.includes('envmon serving'); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.match(stderr, /envmon serving/);
    const server = postmasterPid(dataDir);
    // The PostgreSQL leads a process group of its own, which the terminal's signal does not reach.
    const groupOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[2]);
    assert.equal(groupOf(server!), server, 'the server leads its own process group');
    assert.notEqual(groupOf(server!), groupOf(child.pid!));
    process.kill(-child.pid!, 'SIGINT');
    assert.equal(await exited, 0, stderr);
    // It was asked to stop once, by the service, after the service had drained: not by the terminal first.
    assert.equal(readFileSync(logFile, 'utf8').slice(before).match(/received (fast|smart|immediate) shutdown request/g)?.length, 1);
    assert.equal(alive(server), false, 'the server stopped with the service');
  });
});
