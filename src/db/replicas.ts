import type { Logger } from 'pino';
import { classifyDatabaseError } from './errors.js';
import type { PgPool } from './pgPool.js';

/** Where a read of the heavy kind (a download, a history, an aggregate) runs. */
export type ReadPools = { readPool: PgPool; streamPool: PgPool };

/** What /health/ says of a replica: `current` ones serve reads. */
export type ReplicaState = 'current' | 'lagging' | 'unreachable' | 'not a standby';
export type ReplicaStatus = { name: string; state: ReplicaState; lag_seconds: number | null };

export type ReplicaConnection = { name: string; readPool: PgPool; streamPool: PgPool };

export type ReadRouting = {
  /**
   * Runs `read` on a replica whose replay lag is within the limit (taking them in turn), or on the
   * primary when there is none. A replica that cannot answer (down, restarting, out of connections,
   * a query cancelled by recovery) is set aside until it answers the monitor again, and the read runs
   * on the primary instead: a replica's fault never reaches the client.
   */
  prefer: <T>(read: (pools: ReadPools) => Promise<T>) => Promise<T>;
  status: () => ReplicaStatus[];
  close: () => Promise<void>;
};

type Tracked = ReplicaConnection & { state: ReplicaState; lagSeconds: number | null; replayed: bigint | null };

// The lag is known to within this: the primary's position is sampled this often.
const checkMs = 250;
// A server that has not answered a check within this is unreachable: one that hangs (stopped, or cut
// off without a reset) must not keep its last state, nor hold up the checks of the others.
const answerMs = 2_000;
// The primary's WAL positions of the last quarter hour: a replica further behind is lagging by more.
const maxSamples = 3_600;

/** `query` on `pool`, failing after answerMs however the server behaves. */
function checkQuery<R>(pool: PgPool, query: string): Promise<R> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${answerMs} ms`)), answerMs);
  });
  return Promise.race([pool.query(query).then((result) => result.rows[0] as R), timeout]).finally(() => clearTimeout(timer));
}

/**
 * Read replicas (PostgreSQL streaming standbys) and the lag of each, checked four times a second. The
 * lag is the age of the oldest write the replica has not replayed: the primary's WAL position is sampled
 * with its time, and a replica whose replay position is past every sample is current. Unlike the time since
 * the last replayed transaction, this is 0 for an idle primary and keeps growing for a standby that
 * has lost its primary.
 */
export function createReadRouting(
  primary: { readPool: PgPool; streamPool: PgPool },
  connections: ReplicaConnection[],
  options: { maxLagSeconds: number; log?: Logger },
): ReadRouting {
  const replicas: Tracked[] = connections.map((c) => ({ ...c, state: 'unreachable', lagSeconds: null, replayed: null }));
  const samples: { at: number; lsn: bigint }[] = [];
  let turn = 0;
  let checking: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;

  const lagOf = (replayed: bigint, now: number) => {
    const oldest = samples.find((s) => s.lsn > replayed);
    return oldest ? (now - oldest.at) / 1000 : 0;
  };

  const setState = (replica: Tracked, state: ReplicaState, detail?: string) => {
    if (replica.state !== state) options.log?.info({ replica: replica.name, state, lag_seconds: replica.lagSeconds, detail }, 'read replica state');
    replica.state = state;
  };

  const checkReplica = async (replica: Tracked) => {
    try {
      const row = await checkQuery<{ standby: boolean; replayed: string | null }>(
        replica.readPool,
        `select pg_is_in_recovery() as standby, (pg_last_wal_replay_lsn() - '0/0')::text as replayed`,
      );
      if (!row.standby || row.replayed === null) {
        replica.lagSeconds = null;
        replica.replayed = null;
        setState(replica, 'not a standby');
        return;
      }
      replica.replayed = BigInt(row.replayed);
      replica.lagSeconds = Math.round(lagOf(replica.replayed, Date.now()) * 1000) / 1000;
      setState(replica, replica.lagSeconds <= options.maxLagSeconds ? 'current' : 'lagging');
    } catch (error) {
      replica.lagSeconds = null;
      setState(replica, 'unreachable', error instanceof Error ? error.message : String(error));
    }
  };

  const check = async () => {
    try {
      const lsn = BigInt((await checkQuery<{ lsn: string }>(primary.readPool, `select (pg_current_wal_lsn() - '0/0')::text as lsn`)).lsn);
      if (samples.at(-1)?.lsn !== lsn) samples.push({ at: Date.now(), lsn });
    } catch {
      // The primary's own outage is the service's to report; the replicas keep their last state.
      return;
    }
    await Promise.all(replicas.map(checkReplica));
    // Samples every replica has replayed are of no more use (the last is kept to date the next write).
    const behind = replicas.map((r) => r.replayed).filter((r): r is bigint => r !== null);
    const slowest = behind.length ? behind.reduce((a, b) => (a < b ? a : b)) : undefined;
    while (samples.length > 1 && (samples.length > maxSamples || (slowest !== undefined && samples[0]!.lsn <= slowest))) samples.shift();
  };

  const tick = () => {
    checking ??= check().finally(() => (checking = undefined));
    return checking;
  };
  if (replicas.length) {
    void tick();
    timer = setInterval(() => void tick(), checkMs);
    timer.unref();
  }

  const onPrimary: ReadPools = { readPool: primary.readPool, streamPool: primary.streamPool };

  return {
    prefer: async (read) => {
      const current = replicas.filter((r) => r.state === 'current');
      if (!current.length) return read(onPrimary);
      const replica = current[turn++ % current.length]!;
      try {
        return await read(replica);
      } catch (error) {
        const failure = classifyDatabaseError(error);
        if (failure !== 'unavailable' && failure !== 'busy') throw error;
        replica.lagSeconds = null;
        setState(replica, 'unreachable', error instanceof Error ? error.message : String(error));
        return read(onPrimary);
      }
    },
    // Named by their place in DATABASE_READ_URL: /health/ is public, and publishes no host, port or database.
    status: () => replicas.map((r, i) => ({ name: `replica ${i + 1}`, state: r.state, lag_seconds: r.lagSeconds })),
    close: async () => {
      clearInterval(timer);
      await checking;
      await Promise.all(replicas.flatMap((r) => [r.readPool.end(), r.streamPool.end()]));
    },
  };
}
