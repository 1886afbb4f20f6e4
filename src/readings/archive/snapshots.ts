import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../db/pool.js';
import type { PgPool } from '../../db/pgPool.js';
import { settleStations, type AsOf } from '../core/asOf.js';
import { factLines, factMetadata, licenseUrl } from '../core/attribution.js';
import { SnapshotTooLargeError, type Pinned, type SnapshotSource } from '../core/snapshotSource.js';
import { snapshotQueryOf, type SnapshotQuery } from './snapshotQuery.js';
import { storeSnapshot, type SnapshotLimits } from './snapshotStore.js';

export const snapshotFormats = ['csv', 'parquet'] as const;
export type SnapshotFormat = (typeof snapshotFormats)[number];

/**
 * What a snapshot keeps beside its query: the comment lines of its CSV, the Parquet key-value metadata
 * (as pairs: jsonb keeps no order of an object's keys, and the file's bytes follow theirs), the pins.
 */
type SnapshotPins = Pinned & { comments: string; metadata: [string, string][] };

const snapshotRow = z.object({
  id: z.string(),
  path: z.string(),
  query: z.string(),
  as_of: z.string(),
  created_at: z.string(),
  pinned: z.record(z.unknown()),
  result_sha256: z.string(),
  files: z.record(z.object({ bytes: z.number(), rows: z.number(), sha256: z.string() })),
});
export type SnapshotRow = z.infer<typeof snapshotRow>;

const asIso = (at: string) => new Date(at).toISOString();
const asOfOf = (row: SnapshotRow): AsOf => ({ iso: asIso(row.as_of), at: new Date(row.as_of) });
const pinsOf = (row: SnapshotRow) => row.pinned as unknown as SnapshotPins;
const metadataOf = (pins: SnapshotPins) => Object.fromEntries(pins.metadata);
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** The URL of a snapshot, and of its files. */
export const snapshotUrl = (baseUrl: string, id: string) => `${baseUrl}/snapshots/${id}/`;

/**
 * The snapshot's id: named by its query and its result (the CSV's header and rows), so that the same
 * query over an unchanged archive names the same snapshot, and any change to the result another one.
 */
function snapshotId(path: string, canonical: string, resultSha256: string): string {
  return createHash('sha256').update(`${path}?${canonical}\n${resultSha256}`).digest('hex').slice(0, 24);
}

/** The citation of a snapshot: what it holds, as of when, under which persistent address. */
function snapshotCitation(source: SnapshotSource, query: Record<string, unknown>, asOf: AsOf, pinned: Pinned, url: string): string {
  return `envmon environmental monitoring network, ${source.describe(query, asOf, pinned)}, as of ${asOf.iso}. Snapshot ${url}. Licensed CC BY 4.0.`;
}

/** The CSV file of a snapshot: its comment lines, then the header row and rows of its answer. */
const withComments = (comments: string, body: Buffer) => Buffer.concat([Buffer.from(comments), body]);

/** Makes a snapshot's file from the archive, as of its instant, on `pool`. */
async function makeFile(pool: PgPool, q: SnapshotQuery, asOf: AsOf, pins: SnapshotPins, format: SnapshotFormat, maxBytes: number): Promise<Buffer> {
  if (format === 'csv') return withComments(pins.comments, (await q.source.csv(pool, q.query, asOf, pins, maxBytes)).bytes);
  return q.source.parquet(pool, q.query, asOf, pins, metadataOf(pins), maxBytes);
}

/**
 * Records a snapshot of `q` (as of `given`, else now once its stations' writes in flight have
 * committed), or finds the one the same query and result already have. The answer is made once here,
 * on the primary, to name it and to record each file's size and digest, and its files are stored with the
 * record. A new snapshot past `limits` throws SnapshotQuotaError or SnapshotStoreFullError.
 */
export async function createSnapshot(db: Db, baseUrl: string, q: SnapshotQuery, maxBytes: number, given?: AsOf, limits?: SnapshotLimits): Promise<SnapshotRow> {
  const stations = q.source.stations(q.query);
  const asOf = given ?? (await settleStations(db, stations));
  const pinned = await q.source.pin(db.streamPool, q.query, asOf);
  const body = await q.source.csv(db.streamPool, q.query, asOf, pinned, maxBytes);
  const resultSha256 = sha256(body.bytes);
  const id = snapshotId(q.source.path, q.canonical, resultSha256);
  const existing = await findSnapshot(db, id);
  if (existing) return existing;
  const url = snapshotUrl(baseUrl, id);
  const cite = snapshotCitation(q.source, q.query, asOf, pinned, url);
  // What the files say of their rows is the endpoint's to say (what its live answer says, and more); kept
  // with the pins, so that a snapshot's files keep their bytes whatever later versions say.
  const facts = q.source.facts(q.query, asOf, pinned);
  const pins: SnapshotPins = {
    ...pinned,
    comments: [
      `# Data licensed under Creative Commons Attribution 4.0 International (CC BY 4.0): ${licenseUrl}`,
      `# Cite as: ${cite}`,
      `# As of ${asOf.iso}: the archive as it stood then.`,
      ...factLines(facts),
    ].join('\n') + '\n',
    metadata: [['license', licenseUrl], ['citation', cite], ...factMetadata(facts), ['as_of', asOf.iso], ['snapshot', url]],
  };
  const csv = withComments(pins.comments, body.bytes);
  const parquet = await q.source.parquet(db.streamPool, q.query, asOf, pins, metadataOf(pins), maxBytes);
  const files = {
    csv: { bytes: csv.length, rows: body.rows, sha256: sha256(csv) },
    parquet: { bytes: parquet.length, rows: body.rows, sha256: sha256(parquet) },
  };
  await storeSnapshot(db, sql.fragment`
    insert into snapshots (id, path, query, as_of, pinned, result_sha256, files, made_by)
    values (${id}, ${q.source.path}, ${q.canonical}, ${asOf.iso}, ${sql.jsonb(pins)}, ${resultSha256}, ${sql.jsonb(files)}, ${limits?.client ?? null})`,
  id, { csv, parquet }, limits);
  return (await findSnapshot(db, id))!;
}

export async function findSnapshot(db: Db, id: string): Promise<SnapshotRow | null> {
  return db.pool.maybeOne(sql.type(snapshotRow)`
    select id, path, query, as_of, created_at, pinned, result_sha256, files from snapshots where id = ${id}`);
}

/** Every snapshot, oldest first. */
export async function listSnapshots(db: Db): Promise<readonly SnapshotRow[]> {
  return db.pool.any(sql.type(snapshotRow)`
    select id, path, query, as_of, created_at, pinned, result_sha256, files from snapshots order by created_at, id`);
}

/** The snapshot's query with the endpoint that answers it. */
export function querySnapshot(row: SnapshotRow, sources: readonly SnapshotSource[]): SnapshotQuery {
  const source = sources.find((s) => s.path === row.path);
  if (!source) throw new Error(`snapshot ${row.id} names ${row.path}, which this version does not serve`);
  return snapshotQueryOf(source, row.query);
}

/**
 * A snapshot's file made again, on `pool` (a replica's or the primary's): its bytes when their digest is
 * the one recorded, else null (they are never given out).
 */
export async function remakeFile(pool: PgPool, row: SnapshotRow, sources: readonly SnapshotSource[], format: SnapshotFormat): Promise<Buffer | null> {
  const recorded = row.files[format]!;
  // A file longer than the one recorded cannot be it: it is not made to its end.
  const bytes = await makeFile(pool, querySnapshot(row, sources), asOfOf(row), pinsOf(row), format, recorded.bytes).catch((error: unknown) => {
    if (error instanceof SnapshotTooLargeError) return null;
    throw error;
  });
  return bytes && bytes.length === recorded.bytes && sha256(bytes) === recorded.sha256 ? bytes : null;
}

/**
 * Whether the live answer to the snapshot's query differs from the snapshot's (its header and rows). The
 * live answer is the one a request would get now: with the quality-control configurations and interval
 * in force now, not those pinned, so that a change of them shows; only a window's end stays the
 * snapshot's, as its query names the hours before its instant.
 */
export async function liveDiffers(db: Db, row: SnapshotRow, sources: readonly SnapshotSource[], maxBytes: number): Promise<boolean> {
  const q = querySnapshot(row, sources);
  const now = await settleStations(db, q.source.stations(q.query));
  const pins = pinsOf(row);
  try {
    const live: Pinned = { ...pins, ...(await q.source.pin(db.streamPool, q.query, now)), windowEnd: pins.windowEnd };
    const body = await q.source.csv(db.streamPool, q.query, now, live, maxBytes);
    return sha256(body.bytes) !== row.result_sha256;
  } catch (error) {
    // Grown beyond what a snapshot may hold: it differs from one that was not.
    if (error instanceof SnapshotTooLargeError) return true;
    throw error;
  }
}

/** The settings whose changes a snapshot's answer depends on: those it pinned. */
export function snapshotSettings(row: SnapshotRow): { qc: boolean; interval: boolean } {
  const pins = pinsOf(row);
  return { qc: pins.qc !== undefined, interval: pins.intervalSeconds !== undefined };
}

/** The instant a snapshot is as of. */
export const snapshotAsOf = asOfOf;

/** The citation a snapshot's files carry. */
export const snapshotCitationOf = (row: SnapshotRow) => metadataOf(pinsOf(row)).citation!;

/**
 * The snapshot of a query as of an instant given, if one was made with the same pins: the archive as of
 * a past instant does not change, and the pins are all else its answer depends on, so the answer need not
 * be made again to find it. Costs a lookup and the pins' own (a station's interval, its QC configuration).
 */
export async function findSnapshotAsOf(db: Db, q: SnapshotQuery, asOf: AsOf): Promise<SnapshotRow | null> {
  const rows = await db.pool.any(sql.type(snapshotRow)`
    select id, path, query, as_of, created_at, pinned, result_sha256, files from snapshots
    where as_of = ${asOf.iso} and path = ${q.source.path} and query = ${q.canonical}
    order by created_at, id`);
  if (rows.length === 0) return null;
  // As jsonb keeps them: no undefined, keys in any order.
  const pinned: unknown = JSON.parse(JSON.stringify(await q.source.pin(db.streamPool, q.query, asOf)));
  return rows.find((row) => {
    const kept: Record<string, unknown> = { ...pinsOf(row) };
    delete kept.comments;
    delete kept.metadata;
    return isDeepStrictEqual(kept, pinned);
  }) ?? null;
}
