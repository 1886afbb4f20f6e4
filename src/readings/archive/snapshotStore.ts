import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../db/pool.js';
import type { PgPool } from '../../db/pgPool.js';

/** Every chunk of a stored file but the last holds this many bytes (the migration's format). */
export const chunkBytes = 1024 * 1024;
const mib = 1024 * 1024;

/** How many chunks a file of `size` bytes is stored in. */
const chunksOf = (size: number) => Math.ceil(size / chunkBytes);

/** What bounds the store: one client's snapshots in a day, and the whole store (in MiB; 0: no bound). */
export type SnapshotLimits = { client: string; quotaMb: number; storeMb: number };

/** Thrown when a client's snapshots of the last day and a new one would be more than SNAPSHOT_QUOTA_MB. */
export class SnapshotQuotaError extends Error {
  constructor(readonly quotaMb: number, readonly usedBytes: number, readonly neededBytes: number, readonly retryAfterSeconds: number | null) {
    super(`snapshot quota of ${quotaMb} MiB reached`);
  }
}

/** Thrown when the stored snapshots and a new one would be more than SNAPSHOT_STORE_MB. */
export class SnapshotStoreFullError extends Error {
  constructor(readonly storeMb: number, readonly storedBytes: number, readonly neededBytes: number) {
    super(`snapshot store of ${storeMb} MiB full`);
  }
}

// Both files of a snapshot, as recorded: what it costs in the store.
const snapshotBytes = sql.fragment`((files->'csv'->>'bytes')::bigint + (files->'parquet'->>'bytes')::bigint)`;

/**
 * Refuses a snapshot of `neededBytes` (SnapshotQuotaError, SnapshotStoreFullError) when it would take the
 * client's snapshots of the last 24 hours past its quota, or the store past its cap; 0 asks whether the
 * client or the store is already full, before anything is made. Snapshots made before the store count
 * towards the cap, as their files are stored when first asked for.
 */
export async function checkSnapshotLimits(db: CommonQueryMethods, limits: SnapshotLimits, neededBytes: number): Promise<void> {
  const needed = Math.max(neededBytes, 1);
  if (limits.quotaMb > 0) {
    const quota = limits.quotaMb * mib;
    const used = await db.oneFirst(sql.type(z.object({ used: z.number() }))`
      select coalesce(sum(${snapshotBytes}), 0)::bigint as used from snapshots
      where made_by = ${limits.client} and created_at > now() - interval '1 day'`);
    if (used + needed > quota) {
      // Waiting helps once enough of the client's snapshots of the day have left the day; never when the
      // snapshot alone is larger than the quota.
      const wait = needed > quota ? null : await db.maybeOneFirst(sql.type(z.object({ wait: z.number() }))`
        select ceil(extract(epoch from created_at + interval '1 day' - now()))::int as wait from (
          select created_at, sum(${snapshotBytes}) over (order by created_at, id) as freed from snapshots
          where made_by = ${limits.client} and created_at > now() - interval '1 day') mine
        where ${used} - freed + ${needed} <= ${quota}
        order by created_at limit 1`);
      throw new SnapshotQuotaError(limits.quotaMb, used, neededBytes, wait === null ? null : Math.max(1, wait));
    }
  }
  if (limits.storeMb > 0) {
    const stored = await db.oneFirst(sql.type(z.object({ stored: z.number() }))`
      select coalesce(sum(${snapshotBytes}), 0)::bigint as stored from snapshots`);
    if (stored + needed > limits.storeMb * mib) throw new SnapshotStoreFullError(limits.storeMb, stored, neededBytes);
  }
}

/**
 * Records a new snapshot's row (`insert`, which inserts nothing when another request recorded it first)
 * and stores its files beside it, in one transaction: a snapshot is never seen without its bytes. The
 * limits are checked under one lock, so that concurrent snapshots cannot together pass them.
 */
export async function storeSnapshot(
  db: Db, insert: ReturnType<typeof sql.fragment>, id: string, files: Record<string, Buffer>, limits: SnapshotLimits | undefined,
): Promise<void> {
  await db.pool.transaction(async (tx) => {
    if (limits) {
      await tx.query(sql.type(z.object({}))`select pg_advisory_xact_lock(hashtext('envmon snapshot store'))`);
      await checkSnapshotLimits(tx, limits, Object.values(files).reduce((sum, bytes) => sum + bytes.length, 0));
    }
    const inserted = await tx.maybeOne(sql.type(z.object({ id: z.string() }))`${insert} on conflict (id) do nothing returning id`);
    if (!inserted) return;
    for (const [format, bytes] of Object.entries(files)) await insertChunks(tx, id, format, bytes);
  });
}

/** Writes a file as its chunks, one statement each, so that no copy of the whole file is made to send it. */
async function insertChunks(tx: CommonQueryMethods, id: string, format: string, bytes: Buffer): Promise<void> {
  for (let n = 0; n < chunksOf(bytes.length); n++) {
    await tx.query(sql.type(z.object({}))`
      insert into snapshot_chunks (snapshot_id, format, n, bytes)
      values (${id}, ${format}, ${n}, ${sql.binary(bytes.subarray(n * chunkBytes, (n + 1) * chunkBytes))})`);
  }
}

/** How many chunks of a file are stored: a count of the index, no chunk read. */
const storedChunks = (db: CommonQueryMethods, id: string, format: string) => db.oneFirst(sql.type(z.object({ count: z.number() }))`
    select count(*)::int as count from snapshot_chunks where snapshot_id = ${id} and format = ${format}`);

/** Whether a file of `size` bytes is stored whole: all its chunks are there. */
export async function isStored(db: Db, id: string, format: string, size: number): Promise<boolean> {
  return (await storedChunks(db.pool, id, format)) === chunksOf(size);
}

/**
 * Stores a file made again for a snapshot recorded before its files were kept, unless a concurrent
 * request (of this instance or another) stored it first: the lock makes it stored once, and chunks left
 * by an incomplete store are replaced. The caller has checked the bytes against the recorded digest.
 */
export async function storeMadeFile(db: Db, id: string, format: string, bytes: Buffer): Promise<void> {
  await db.pool.transaction(async (tx) => {
    await tx.query(sql.type(z.object({}))`select pg_advisory_xact_lock(hashtext(${`envmon snapshot ${id} ${format}`}))`);
    if ((await storedChunks(tx, id, format)) === chunksOf(bytes.length)) return;
    await tx.query(sql.type(z.object({}))`delete from snapshot_chunks where snapshot_id = ${id} and format = ${format}`);
    await insertChunks(tx, id, format, bytes);
  });
}

// Text rows: the driver's binary rows give bytea as text, not as its bytes.
const chunkQuery = (values: unknown[]) => ({
  name: 'snapshot-chunk',
  text: 'select substring(bytes from $4 for $5) as bytes from snapshot_chunks where snapshot_id = $1 and format = $2 and n = $3',
  values,
});

/**
 * The bytes `start` to `end` (inclusive) of a stored file, read a chunk at a time as the reader takes
 * them: a connection is held only while a chunk is read, and a range reads only the chunks it covers.
 * With `sha256`, the bytes are the whole file and are checked as they pass: a file whose bytes differ
 * from their digest ends in an error, so that its client sees a cut answer rather than a whole one.
 */
export function readStoredFile(pool: PgPool, id: string, format: string, start: number, end: number, sha256?: string): Readable {
  async function* chunks() {
    const hash = sha256 ? createHash('sha256') : null;
    for (let n = Math.floor(start / chunkBytes); n * chunkBytes <= end; n++) {
      const from = Math.max(start - n * chunkBytes, 0);
      const length = Math.min(end + 1 - n * chunkBytes, chunkBytes) - from;
      const { rows } = await pool.read<{ bytes: Buffer }>(chunkQuery([id, format, n, from + 1, length]));
      const bytes = rows[0]?.bytes;
      if (!bytes || bytes.length !== length) throw new Error(`snapshot ${id}'s stored ${format} file lacks chunk ${n}`);
      hash?.update(bytes);
      yield bytes;
    }
    if (hash && hash.digest('hex') !== sha256) throw new Error(`snapshot ${id}'s stored ${format} file differs from its recorded digest`);
  }
  return Readable.from(chunks(), { objectMode: false });
}

/**
 * The SHA-256 of a stored file, read a chunk at a time; null when it is not stored (all its chunks
 * absent), 'incomplete' when some of its chunks are missing or of the wrong size.
 */
export async function storedDigest(db: Db, id: string, format: string, size: number): Promise<string | null> {
  const count = await storedChunks(db.pool, id, format);
  if (count === 0) return null;
  const hash = createHash('sha256');
  try {
    for await (const bytes of readStoredFile(db.readPool, id, format, 0, size - 1)) hash.update(bytes as Buffer);
  } catch {
    return 'incomplete';
  }
  return count === chunksOf(size) ? hash.digest('hex') : 'incomplete';
}
