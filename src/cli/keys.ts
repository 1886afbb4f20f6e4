import type { Db } from '../db/pool.js';
import { stationExists } from '../stations/queries.js';
import { issueKey, listKeys, revokeKey } from '../stations/keys.js';
import { parseCommandArgs } from './args.js';
import { UsageError } from './usage.js';

/** `envmon keys issue ID [--label TEXT] | list ID | revoke KEY_ID` */
export async function keysCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = args;
  const { values, positionals } = parseCommandArgs(rest, sub === 'issue' ? { label: { type: 'string' } } : {}, [sub === 'revoke' ? 'KEY_ID' : 'ID']);
  const target = positionals[0]!;
  switch (sub) {
    case 'issue': {
      if (!(await stationExists(db.pool, target))) throw new UsageError(`station '${target}' does not exist; add it with 'envmon stations add'`);
      const label = (values as { label?: string }).label;
      if (label !== undefined && (label.length > 200 || label.includes('\u0000'))) throw new UsageError('--label must be at most 200 characters');
      const { keyId, key } = await issueKey(db.pool, target, label ?? null);
      out(`key ${keyId} issued for station ${target}; it is shown once, store it now:`);
      out(key);
      return;
    }
    case 'list': {
      if (!(await stationExists(db.pool, target))) throw new UsageError(`station '${target}' does not exist`);
      const keys = await listKeys(db.pool, target);
      if (keys.length === 0) out(`station ${target} has no keys`);
      for (const key of keys) {
        out(`${key.key_id}\t${key.revoked_at ? `revoked ${key.revoked_at}` : 'active'}\tcreated ${key.created_at}${key.label ? `\t${key.label}` : ''}`);
      }
      return;
    }
    case 'revoke': {
      if (!(await revokeKey(db.pool, target))) throw new UsageError(`no key with id '${target}'`);
      out(`key ${target} revoked`);
      return;
    }
    default:
      throw new UsageError(`unknown keys command '${sub ?? ''}'; use issue, list or revoke`);
  }
}
