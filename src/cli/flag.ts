import type { Db } from '../db/pool.js';
import { listOverrides, recordOverride } from '../readings/operator/overrides.js';
import { qualityFlags, type QualityFlag } from '../readings/reading.js';
import { stationExists } from '../stations/queries.js';
import { parseCommandArgs } from './args.js';
import { parseTime } from './times.js';
import { UsageError } from './usage.js';

/**
 * `envmon flag --station ID --from T --to T --flag invalid|ok|suspect [--reason TEXT]` records an override
 * (times are UTC unless they carry an offset); `envmon flag --list ID` prints a station's overrides.
 */
export async function flagCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const { values } = parseCommandArgs(
    args,
    {
      station: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      flag: { type: 'string' },
      reason: { type: 'string' },
      list: { type: 'string' },
    },
    [],
  );
  if (values.list !== undefined) {
    if (!(await stationExists(db.pool, values.list))) throw new UsageError(`station '${values.list}' does not exist`);
    const overrides = await listOverrides(db, values.list);
    if (overrides.length === 0) out(`no overrides for ${values.list}`);
    for (const o of overrides) out(`${o.id}\t${o.from_ts}\t${o.to_ts}\t${o.flag}\t${o.created_at}\t${o.reason}`);
    return;
  }
  if (values.station === undefined) throw new UsageError('--station is required');
  const from = parseTime('from', values.from);
  const to = parseTime('to', values.to);
  if (from > to) throw new UsageError('--from must not be after --to');
  if (!qualityFlags.includes(values.flag as QualityFlag)) throw new UsageError(`--flag must be one of ${qualityFlags.join(', ')}`);
  const reason = values.reason?.trim() || 'operator override';
  if (!(await stationExists(db.pool, values.station))) throw new UsageError(`station '${values.station}' does not exist`);
  const { changed, refreshed } = await recordOverride(db, { stationId: values.station, from, to, flag: values.flag as QualityFlag, reason });
  out(`${changed} readings of ${values.station} flagged ${values.flag} between ${from} and ${to}`);
  if (!refreshed) out('the rollups could not be refreshed now; the running service brings them up to date within a minute');
}
