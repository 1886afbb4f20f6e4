import { z } from 'zod';

const integer = (fallback: number, min: number, max: number) => {
  const message = `must be a whole number from ${min} to ${max}`;
  return z.coerce
    .number({ invalid_type_error: message })
    .int(message)
    .min(min, message)
    .max(max, message)
    .default(fallback);
};

const url = (protocols: string[]) =>
  z
    .string()
    .url('must be a URL')
    .refine((value) => protocols.includes(new URL(value).protocol), {
      message: `must start with ${protocols.map((p) => `${p}//`).join(' or ')}`,
    });

const optional = <T extends z.ZodTypeAny>(schema: T) =>
  z.preprocess((value) => (value === '' ? undefined : value), schema.optional());

/** Comma-separated database URLs (spaces around the commas allowed); empty means none. */
const urlList = z
  .string()
  .default('')
  .transform((value) => value.split(',').map((u) => u.trim()).filter(Boolean))
  .pipe(z.array(url(['postgres:', 'postgresql:'])));

const configSchema = z.object({
  DATABASE_URL: optional(url(['postgres:', 'postgresql:'])),
  DATABASE_READ_URL: urlList,
  REPLICA_MAX_LAG_SECONDS: integer(5, 1, 3600),
  DB_ENGINE: z.enum(['auto', 'timescale', 'portable']).default('auto'),
  PORT: integer(8000, 0, 65535),
  HOST: z.string().min(1).default('127.0.0.1'),
  PUBLIC_URL: url(['http:', 'https:']).default('http://localhost:8000'),
  REDIS_URL: optional(url(['redis:', 'rediss:'])),
  RATE_LIMIT_PER_MINUTE: integer(120, 0, 1_000_000),
  // How many proxies of one's own append to X-Forwarded-For: `true` is one, `false` none.
  TRUST_PROXY: z
    .string()
    .default('false')
    .transform((value) => (value === 'true' ? '1' : value === 'false' ? '0' : value))
    .pipe(z.coerce.number({ invalid_type_error: 'must be true, false or a number of proxies from 0 to 16' }).int('must be true, false or a number of proxies from 0 to 16').min(0, 'must be true, false or a number of proxies from 0 to 16').max(16, 'must be true, false or a number of proxies from 0 to 16')),
  DEFAULT_STATION: optional(z.string().min(1)),
  INGEST_MAX_READINGS: integer(10_000, 1, 1_000_000),
  INGEST_MAX_BYTES: integer(5 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
  INGEST_MAX_FUTURE_SECONDS: integer(300, 0, 86_400),
  DATA_DIR: z.string().min(1).default('.data'),
  EMBEDDED_PG_PORT: integer(54329, 1024, 65535),
  DB_POOL_SIZE: integer(10, 1, 200),
  INGEST_POOL_SIZE: integer(4, 1, 100),
  STREAM_POOL_SIZE: integer(4, 1, 100),
  STREAM_STALL_MS: integer(30_000, 100, 3_600_000),
  DOWNLOADS_PER_CLIENT: integer(2, 1, 100),
  COMPUTED_PER_CLIENT: integer(2, 1, 100),
  COMPUTED_READS: integer(4, 1, 1000),
  COMPUTED_WAIT_MS: integer(2_000, 0, 60_000),
  SNAPSHOTS_AT_ONCE: integer(2, 1, 100),
  STREAMS_PER_CLIENT: integer(4, 1, 1000),
  STREAM_HEARTBEAT_SECONDS: integer(15, 1, 300),
  STATEMENT_TIMEOUT_MS: integer(15_000, 100, 3_600_000),
  DOWNLOAD_TIMEOUT_MS: integer(300_000, 100, 86_400_000),
  ROLLUP_HEAL_SECONDS: integer(30, 1, 3600),
  DRAIN_SECONDS: integer(10, 1, 3600),
  AGGREGATE_CACHE_MB: integer(64, 0, 65_536),
  // No longer used (a snapshot's files are read from the database), and accepted, whatever its value, so
  // that an environment written for an earlier version still starts.
  SNAPSHOT_CACHE_MB: z.unknown().optional(),
  SNAPSHOT_MAX_MB: integer(256, 1, 4_096),
  SNAPSHOT_QUOTA_MB: integer(1_024, 0, 1_048_576),
  SNAPSHOT_STORE_MB: integer(10_240, 0, 16_777_216),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Engine = 'timescale' | 'portable';

export type Config = {
  databaseUrl: string | undefined;
  /** Streaming replicas of the primary for heavy reads; empty: every read on the primary. */
  readUrls: string[];
  replicaMaxLagSeconds: number;
  engine: Engine | 'auto';
  port: number;
  host: string;
  publicUrl: string;
  baseUrl: string;
  redisUrl: string | undefined;
  rateLimitPerMinute: number;
  /**
   * The proxies of one's own in front of the service, each appending the address it saw to
   * X-Forwarded-For: the client is the address the outermost of them saw (that many entries from the right).
   */
  trustProxyHops: number;
  defaultStation: string | undefined;
  ingestMaxReadings: number;
  ingestMaxBytes: number;
  ingestMaxFutureSeconds: number;
  dataDir: string;
  embeddedPort: number;
  poolSize: number;
  ingestPoolSize: number;
  streamPoolSize: number;
  streamStallMs: number;
  downloadsPerClient: number;
  /** Computed reads (costSlots.ts): per client address, in all, and how long one waits for a slot. */
  computedReads: { perClient: number; total: number; waitMs: number };
  /** Snapshots made or compared at once, in all (per client: downloadsPerClient). */
  snapshotsAtOnce: number;
  streamsPerClient: number;
  streamHeartbeatMs: number;
  statementTimeoutMs: number;
  downloadTimeoutMs: number;
  rollupHealSeconds: number;
  /** How long SIGTERM waits for requests in flight (downloads, ingests) before it cuts them and exits 1. */
  drainSeconds: number;
  aggregateCacheMb: number;
  /** The largest answer a snapshot may hold (its CSV or its Parquet file). */
  snapshotMaxMb: number;
  /** MiB of snapshot files one client address may have made in the last 24 hours; 0: no quota. */
  snapshotQuotaMb: number;
  /** MiB of snapshot files the database may hold in all; 0: no cap. */
  snapshotStoreMb: number;
  logLevel: string;
};

/** Thrown with one line per bad setting. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
  }
}

/** Parses the settings once, at start-up; nothing else reads process.env. Throws ConfigError. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const name = String(issue.path[0]);
        const message = issue.code === 'invalid_enum_value' ? `must be one of ${issue.options.join(', ')}` : issue.message;
        return `setting ${name}=${JSON.stringify(env[name] ?? '')} is invalid: ${message}`;
      }),
    );
  }
  const s = parsed.data;
  const publicUrl = s.PUBLIC_URL.replace(/\/+$/, '');
  return {
    databaseUrl: s.DATABASE_URL,
    readUrls: s.DATABASE_READ_URL,
    replicaMaxLagSeconds: s.REPLICA_MAX_LAG_SECONDS,
    engine: s.DB_ENGINE,
    port: s.PORT,
    host: s.HOST,
    publicUrl,
    baseUrl: `${publicUrl}/api/v1`,
    redisUrl: s.REDIS_URL,
    rateLimitPerMinute: s.RATE_LIMIT_PER_MINUTE,
    trustProxyHops: s.TRUST_PROXY,
    defaultStation: s.DEFAULT_STATION,
    ingestMaxReadings: s.INGEST_MAX_READINGS,
    ingestMaxBytes: s.INGEST_MAX_BYTES,
    ingestMaxFutureSeconds: s.INGEST_MAX_FUTURE_SECONDS,
    dataDir: s.DATA_DIR,
    embeddedPort: s.EMBEDDED_PG_PORT,
    poolSize: s.DB_POOL_SIZE,
    ingestPoolSize: s.INGEST_POOL_SIZE,
    streamPoolSize: s.STREAM_POOL_SIZE,
    streamStallMs: s.STREAM_STALL_MS,
    downloadsPerClient: s.DOWNLOADS_PER_CLIENT,
    computedReads: { perClient: s.COMPUTED_PER_CLIENT, total: s.COMPUTED_READS, waitMs: s.COMPUTED_WAIT_MS },
    snapshotsAtOnce: s.SNAPSHOTS_AT_ONCE,
    streamsPerClient: s.STREAMS_PER_CLIENT,
    streamHeartbeatMs: s.STREAM_HEARTBEAT_SECONDS * 1000,
    statementTimeoutMs: s.STATEMENT_TIMEOUT_MS,
    downloadTimeoutMs: s.DOWNLOAD_TIMEOUT_MS,
    rollupHealSeconds: s.ROLLUP_HEAL_SECONDS,
    drainSeconds: s.DRAIN_SECONDS,
    aggregateCacheMb: s.AGGREGATE_CACHE_MB,
    snapshotMaxMb: s.SNAPSHOT_MAX_MB,
    snapshotQuotaMb: s.SNAPSHOT_QUOTA_MB,
    snapshotStoreMb: s.SNAPSHOT_STORE_MB,
    logLevel: s.LOG_LEVEL,
  };
}
