import type { Config } from '../config.js';
import type { Db } from '../db/pool.js';
import { findSnapshot, listSnapshots, remakeFile, snapshotAsOf, snapshotFormats, snapshotUrl, type SnapshotRow } from '../readings/archive/snapshots.js';
import { storedDigest } from '../readings/archive/snapshotStore.js';
import { snapshotSources } from '../snapshotSources.js';
import { UsageError } from './usage.js';

/** Thrown when a snapshot's files made again, or stored, differ from their recorded digests: the command exits 1. */
export class SnapshotsDifferError extends Error {}

/**
 * `envmon snapshots list`: every snapshot (id, as_of, files' rows, the query); `envmon snapshots verify
 * [ID]`: each snapshot's files (or one's) made again from the archive, and those stored, their SHA-256
 * compared with those recorded when it was made. Exits 1 when any differs.
 */
export async function snapshotsCommand(config: Config, db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const [action, id, ...rest] = args;
  if (rest.length > 0) throw new UsageError(`snapshots ${action} takes at most one id`);
  if (action === 'list') {
    if (id !== undefined) throw new UsageError('snapshots list takes no argument');
    const rows = await listSnapshots(db);
    if (rows.length === 0) out('no snapshots');
    for (const row of rows) out(`${row.id}\t${snapshotAsOf(row).iso}\t${row.files.csv!.rows} rows\t${row.path}?${row.query}`);
    return;
  }
  if (action !== 'verify') throw new UsageError(`snapshots takes 'list' or 'verify', got ${action === undefined ? 'nothing' : `'${action}'`}`);
  let rows: readonly SnapshotRow[];
  if (id === undefined) rows = await listSnapshots(db);
  else {
    const row = await findSnapshot(db, id);
    if (!row) throw new UsageError(`snapshot '${id}' does not exist`);
    rows = [row];
  }
  const sources = snapshotSources(config.defaultStation);
  let differing = 0;
  for (const row of rows) {
    const failed: string[] = [];
    for (const format of snapshotFormats) {
      if (!(await remakeFile(db.streamPool, row, sources, format))) failed.push(format);
    }
    for (const format of snapshotFormats) {
      const stored = await storedDigest(db, row.id, format, row.files[format]!.bytes);
      // Not stored yet (made before files were kept): stored when first asked for, once checked.
      if (stored !== null && stored !== row.files[format]!.sha256) failed.push(`stored ${format}`);
    }
    differing += failed.length > 0 ? 1 : 0;
    out(`${row.id}\t${failed.length === 0 ? 'ok' : `DIFFERS (${failed.join(', ')})`}\t${snapshotUrl(config.baseUrl, row.id)}`);
  }
  out(`${rows.length} snapshot${rows.length === 1 ? '' : 's'} verified, ${differing} differ${differing === 1 ? 's' : ''}`);
  if (differing > 0) throw new SnapshotsDifferError(`${differing} snapshot${differing === 1 ? '' : 's'} no longer made as recorded`);
}
