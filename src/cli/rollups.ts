import type { Db } from '../db/pool.js';
import { remakeBuckets, rollupDifferences, rollupLevels, type RollupDifference } from '../readings/aggregates/rollupCheck.js';
import { stationExists } from '../stations/queries.js';
import { parseCommandArgs } from './args.js';
import { UsageError } from './usage.js';

// Differences printed per level; the count says how many there are in all.
const shownPerLevel = 20;

/** Thrown when a verification found buckets that differ and left them so: the command exits 1. */
export class RollupsDifferError extends Error {}

/**
 * `envmon rollups verify [--station ID] [--repair]`: every level of the rollups against a GROUP BY over
 * the readings, bucket by bucket (per station and quality flag). With --repair each level's differing
 * buckets are made again, finest level first (a timescale level is built from the one before), and
 * checked again. Exits 1 when buckets still differ.
 */
export async function rollupsCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'verify') throw new UsageError(`rollups takes 'verify', got ${action === undefined ? 'nothing' : `'${action}'`}`);
  const { values } = parseCommandArgs(rest, { station: { type: 'string' }, repair: { type: 'boolean' } }, []);
  if (values.station !== undefined && !(await stationExists(db.pool, values.station))) throw new UsageError(`station '${values.station}' does not exist`);
  let left = 0;
  for (const { rollup, width } of rollupLevels) {
    const started = Date.now();
    let differences = await rollupDifferences(db, rollup, values.station);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    out(`${rollup}: ${differences.length} bucket${differences.length === 1 ? '' : 's'} differ${differences.length === 1 ? 's' : ''} from the readings (${seconds} s)`);
    for (const d of differences.slice(0, shownPerLevel)) out(describe(d));
    if (differences.length > shownPerLevel) out(`  … and ${differences.length - shownPerLevel} more`);
    if (values.repair && differences.length > 0) {
      await remakeBuckets(db, rollup, width, differences);
      differences = await rollupDifferences(db, rollup, values.station);
      out(`${rollup}: made again; ${differences.length} bucket${differences.length === 1 ? '' : 's'} still differ${differences.length === 1 ? 's' : ''}`);
    }
    left += differences.length;
  }
  if (left > 0) throw new RollupsDifferError(`${left} rollup buckets differ from the readings${values.repair ? ' after the repair' : ': run again with --repair to make them again'}`);
}

function describe(d: RollupDifference): string {
  return `  ${d.station_id} ${d.bucket} ${d.quality_flag}: ${d.difference} (rollup ${d.rollup_n ?? 'none'}, readings ${d.readings_n ?? 'none'})`;
}
