import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { runCommand } from './cli.js';
import { admin } from './database.js';
import { freePort } from './ports.js';
import { testServer } from './server.js';

/**
 * A streaming replica of the test's PostgreSQL: pg_basebackup of the whole cluster into a second data
 * directory, started as a hot standby on its own port. PostgreSQL's own replication, as production has it.
 */
export type Standby = {
  port: number;
  /** The URL of `databaseUrl`'s database on the standby. */
  urlOf: (databaseUrl: string) => string;
  /** Stops or resumes replaying the primary's WAL (it keeps receiving it). */
  pauseReplay: () => Promise<void>;
  resumeReplay: () => Promise<void>;
  /** Stops every process of the server where it stands (a hang: connections open, nothing answered), and resumes them. */
  freeze: () => Promise<void>;
  thaw: () => Promise<void>;
  /** Shuts it down fast (connections cut), and starts it again on the same port (when it is not running). */
  stop: () => Promise<void>;
  start: () => Promise<void>;
  close: () => Promise<void>;
};

const adminQuery = async <R extends pg.QueryResultRow>(url: string, text: string): Promise<R[]> => (await admin(url, (c) => c.query<R>(text))).rows;

/** The uid and gid of the postgres user when the tests run as root (PostgreSQL refuses to run as root). */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const [uid, gid] = await Promise.all(['-u', '-g'].map(async (flag) => Number((await runCommand('id', [flag, 'postgres'])).stdout.trim())));
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error('the tests run as root and there is no postgres user to run a standby');
  return { uid: uid!, gid: gid! };
}

/**
 * Makes and starts a standby of the server at `adminUrl`; resolves with why not (a string) when this
 * server cannot have one here (no pg_basebackup of its version: the embedded server ships none).
 */
export async function startStandby(adminUrl: string): Promise<Standby | string> {
  const settings = Object.fromEntries((await adminQuery<{ name: string; setting: string }>(adminUrl, `
    select name, setting from pg_settings where name in ('server_version_num', 'shared_preload_libraries', 'max_connections',
      'max_worker_processes', 'max_wal_senders', 'max_prepared_transactions', 'max_locks_per_transaction', 'hba_file', 'wal_level')
    union all select 'bindir', setting from pg_config where name = 'BINDIR'`)).map((r) => [r.name, r.setting]));
  const major = Math.floor(Number(settings.server_version_num) / 10_000);
  const bindir = [settings.bindir!, `/usr/lib/postgresql/${major}/bin`].find((dir) => existsSync(path.join(dir, 'pg_basebackup')));
  if (!bindir) return `no pg_basebackup for PostgreSQL ${major} on this machine`;
  if (settings.wal_level === 'minimal') return 'the server runs with wal_level=minimal';

  const user = await serverUser();
  const asServer = user ? { uid: user.uid, gid: user.gid } : {};
  const dir = mkdtempSync(path.join(os.tmpdir(), 'envmon-standby-'));
  chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  const sockets = path.join(dir, 'sockets');
  for (const made of [data, sockets]) {
    mkdirSync(made, { mode: 0o700 });
    if (user) chownSync(made, user.uid, user.gid);
  }

  const primary = new URL(adminUrl);
  const password = decodeURIComponent(primary.password);
  const conninfo = `host=${primary.hostname} port=${primary.port || 5432} user=${decodeURIComponent(primary.username) || 'postgres'}`;
  const basebackup = () => new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(path.join(bindir, 'pg_basebackup'), ['-d', conninfo, '-D', data, '-X', 'stream', '-c', 'fast', '-R'], {
      env: { PATH: process.env.PATH ?? '', ...(password ? { PGPASSWORD: password } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
      ...asServer,
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
  let copied = await basebackup();
  if (copied.code !== 0 && /pg_hba\.conf/.test(copied.stderr) && settings.hba_file) {
    // A test machine's server that takes no replication connection yet: allow them from this host, as a
    // production primary allows its standbys.
    appendFileSync(settings.hba_file, `\n# streaming replicas of the envmon tests\nhost replication all 127.0.0.1/32 ${password ? 'scram-sha-256' : 'trust'}\n`);
    await adminQuery(adminUrl, 'select pg_reload_conf()');
    rmSync(data, { recursive: true, force: true });
    mkdirSync(data, { mode: 0o700 });
    if (user) chownSync(data, user.uid, user.gid);
    copied = await basebackup();
  }
  if (copied.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`pg_basebackup failed: ${copied.stderr}`);
  }
  // A Debian cluster keeps its configuration outside the data directory: the standby gets its own.
  for (const [file, text] of [['postgresql.conf', ''], ['pg_hba.conf', 'local all all trust\nhost all all 127.0.0.1/32 trust\n']] as const) {
    const target = path.join(data, file);
    if (!existsSync(target)) {
      writeFileSync(target, text);
      if (user) chownSync(target, user.uid, user.gid);
    }
  }

  const port = await freePort();
  const options = {
    port: String(port), listen_addresses: '127.0.0.1', unix_socket_directories: sockets, hot_standby: 'on', hot_standby_feedback: 'on',
    // A hot standby needs at least the primary's limits.
    ...Object.fromEntries(['shared_preload_libraries', 'max_connections', 'max_worker_processes', 'max_wal_senders', 'max_prepared_transactions', 'max_locks_per_transaction']
      .map((name) => [name, settings[name]!])),
    ...(settings.shared_preload_libraries?.includes('timescaledb') ? { 'timescaledb.telemetry_level': 'off' } : {}),
  };
  const args = ['-D', data, ...Object.entries(options).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
  const urlOf = (databaseUrl: string) => {
    const url = new URL(databaseUrl);
    url.hostname = '127.0.0.1';
    url.port = String(port);
    return url.toString();
  };
  const adminOnStandby = urlOf(adminUrl);

  let child: ChildProcess | undefined;
  let log = '';
  const start = async () => {
    if (child && child.exitCode === null) return;
    const started = spawn(path.join(bindir, 'postgres'), args, { stdio: ['ignore', 'ignore', 'pipe'], ...asServer });
    started.stderr!.on('data', (chunk) => (log = (log + chunk).slice(-4000)));
    child = started;
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`the standby exited: ${log}`);
      try {
        await adminQuery(adminOnStandby, 'select 1');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`the standby did not accept connections: ${String(error)}\n${log}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };
  const stop = async () => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGINT');
    await exited;
  };
  const signalAll = async (signal: 'SIGSTOP' | 'SIGCONT') => {
    const pid = child?.pid;
    if (!pid) return;
    // The postmaster first, so that it forks no new backend meanwhile; then every backend it has.
    const children = (await runCommand('pgrep', ['-P', String(pid)])).stdout.split('\n').filter(Boolean).map(Number);
    for (const target of signal === 'SIGSTOP' ? [pid, ...children] : [...children, pid]) process.kill(target, signal);
  };
  await start();
  return {
    freeze: () => signalAll('SIGSTOP'),
    thaw: () => signalAll('SIGCONT'),
    port,
    urlOf,
    pauseReplay: async () => void (await adminQuery(adminOnStandby, 'select pg_wal_replay_pause()')),
    resumeReplay: async () => void (await adminQuery(adminOnStandby, 'select pg_wal_replay_resume()')),
    stop,
    start,
    close: async () => {
      await signalAll('SIGCONT');
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A standby for the describe block that calls this: made before its tests (which are skipped, saying
 * why, when this server cannot have one) and closed after them. Gives the running standby.
 */
export function useStandby(what: string): () => Standby | undefined {
  let standby: Standby | undefined;
  before(async function () {
    this.timeout(120_000);
    const made = await startStandby(testServer().adminUrl);
    if (typeof made === 'string') {
      console.log(`      ${what}: not tested here (${made})`);
      this.skip();
    }
    standby = made;
  });
  after(async () => {
    await standby?.close();
  });
  return () => standby;
}
