import { readFile } from 'node:fs/promises';
import type { Db } from '../db/pool.js';
import { qcConfigInForce, qcConfigSchema, setQcConfig, type QcConfig } from '../readings/core/qc/config.js';
import { stationExists } from '../stations/queries.js';
import { parseCommandArgs } from './args.js';
import { UsageError } from './usage.js';

/**
 * `envmon qc show STATION`: the configuration the station's readings are flagged by, as the API
 * publishes it; `envmon qc set STATION FILE [--reason TEXT]`: the station's own configuration from a JSON
 * file in ioos_qc's format (checked whole first); `envmon qc reset STATION [--reason TEXT]`: the defaults
 * again. A change holds from now on: reads as of an earlier instant keep the configuration in force then,
 * and the change log lists the change with its reason.
 */
export async function qcCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'show' && action !== 'set' && action !== 'reset') {
    throw new UsageError(`qc takes 'show', 'set' or 'reset', got ${action === undefined ? 'nothing' : `'${action}'`}`);
  }
  const { values, positionals } = parseCommandArgs(rest, action === 'show' ? {} : { reason: { type: 'string' } }, action === 'set' ? ['ID', 'FILE'] : ['ID']);
  const [stationId, file] = positionals as [string, string | undefined];
  const reason = (values as { reason?: string }).reason?.trim() || null;
  if (!(await stationExists(db.pool, stationId))) throw new UsageError(`station '${stationId}' does not exist`);
  if (action === 'show') {
    const { config, own } = await qcConfigInForce(db.readPool, stationId);
    out(JSON.stringify(config, null, 2));
    out(`(${own ? 'the station\'s own configuration' : 'the defaults'})`);
    return;
  }
  if (action === 'reset') {
    await setQcConfig(db.pool, stationId, null, reason);
    out(`station ${stationId} runs the default quality-control configuration from now on`);
    return;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(file!, 'utf8'));
  } catch (error) {
    throw new UsageError(`cannot read ${file} as JSON: ${(error as Error).message}`);
  }
  const result = qcConfigSchema.safeParse(parsed);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(top)'}: ${issue.message}`);
    throw new UsageError(`${file} is not a configuration envmon runs:\n  ${problems.join('\n  ')}`);
  }
  await setQcConfig(db.pool, stationId, result.data as QcConfig, reason);
  const streams = Object.keys(result.data.streams);
  out(`station ${stationId} runs its own quality-control configuration from now on (${streams.length} stream${streams.length === 1 ? '' : 's'}: ${streams.join(', ') || 'none'})`);
}
