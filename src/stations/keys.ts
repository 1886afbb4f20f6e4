import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';

/** A key as shown to its holder once: `em_<key id>_<secret>`. Only its SHA-256 is stored. */
export type IssuedKey = { keyId: string; key: string };

const keyRow = z.object({
  key_id: z.string(),
  station_id: z.string(),
  label: z.string().nullable(),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});
export type KeyRow = z.infer<typeof keyRow>;

function hashKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Creates a fresh random key (256 bits of entropy) for the station, labelled with what holds it. */
export async function issueKey(db: CommonQueryMethods, stationId: string, label: string | null = null): Promise<IssuedKey> {
  const keyId = randomBytes(6).toString('hex');
  const key = `em_${keyId}_${randomBytes(32).toString('base64url')}`;
  await db.query(sql.type(z.object({}))`
    insert into station_keys (key_id, station_id, key_hash, label)
    values (${keyId}, ${stationId}, ${sql.binary(hashKey(key))}, ${label})
  `);
  return { keyId, key };
}

export async function listKeys(db: CommonQueryMethods, stationId: string): Promise<readonly KeyRow[]> {
  return db.any(sql.type(keyRow)`
    select key_id, station_id, label, created_at, revoked_at from station_keys
    where station_id = ${stationId} order by created_at, key_id
  `);
}

/** Deletes every key with this label (the demo feed's own); returns how many there were. */
export async function deleteKeysLabelled(db: CommonQueryMethods, label: string): Promise<number> {
  return (await db.query(sql.type(z.object({}))`delete from station_keys where label = ${label}`)).rowCount;
}

/** Revokes a key at once; returns false when no such key exists. */
export async function revokeKey(db: CommonQueryMethods, keyId: string): Promise<boolean> {
  const row = await db.maybeOne(sql.type(z.object({ key_id: z.string() }))`
    update station_keys set revoked_at = coalesce(revoked_at, now()) where key_id = ${keyId} returning key_id
  `);
  return row !== null;
}

/**
 * The station a live key belongs to, or null. The presented key is hashed before the lookup, so an
 * unknown key and a wrong one cost the same index probe, and the stored hash is compared in constant time.
 */
export async function findStationByKey(db: CommonQueryMethods, key: string): Promise<string | null> {
  const presented = hashKey(key);
  const row = await db.maybeOne(sql.type(z.object({ station_id: z.string(), key_hash: z.instanceof(Buffer) }))`
    select station_id, key_hash from station_keys where key_hash = ${sql.binary(presented)} and revoked_at is null
  `);
  if (!row || !timingSafeEqual(row.key_hash, presented)) return null;
  return row.station_id;
}
