import type { Db } from '../db/pool.js';
import { deleteReadings } from '../readings/operator/removal.js';
import { stationExists } from '../stations/queries.js';
import { parseCommandArgs } from './args.js';
import { parseTime } from './times.js';
import { UsageError } from './usage.js';

/**
 * `envmon readings delete --station ID --from T --to T [--reason TEXT]`: removes readings stored by mistake;
 * aggregates follow, and the deletion is kept in the change log with its reason.
 */
export async function readingsCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'delete') throw new UsageError(`readings takes 'delete', got ${action === undefined ? 'nothing' : `'${action}'`}`);
  const { values } = parseCommandArgs(rest, { station: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, reason: { type: 'string' } }, []);
  if (values.station === undefined) throw new UsageError('--station is required');
  const from = parseTime('from', values.from);
  const to = parseTime('to', values.to);
  if (from > to) throw new UsageError('--from must not be after --to');
  if (!(await stationExists(db.pool, values.station))) throw new UsageError(`station '${values.station}' does not exist`);
  const reason = values.reason?.trim() || 'operator deletion';
  const { deleted, refreshed } = await deleteReadings(db, { stationId: values.station, from, to, reason });
  out(`${deleted} readings of ${values.station} deleted between ${from} and ${to}`);
  if (!refreshed) out('the rollups could not be refreshed now; the running service brings them up to date within a minute');
}
