import type { Db } from '../db/pool.js';
import { aggregateReadings, type AggregateArgs, type AggregateRow } from './queries.js';
import { aggregateJson } from './shape.js';

export type AggregateResult = { rows: readonly AggregateRow[]; json: () => string };

type Entry = { version: string; rows: readonly AggregateRow[]; json?: string; bytes: number };

/**
 * The aggregates of a station, kept while its readings stay as they were: each answer is stored under
 * the station's data version (station_latest.version, which every write of the service changes in its
 * transaction), read before the answer is computed, and served again while a fresh look at the version
 * finds it unchanged. A write that lands while an answer is computed changes the version, so that answer
 * is never served under the new one. Researchers' notebooks and dashboards ask for the same aggregates
 * again and again; each repeat costs one indexed lookup. At most `maxBytes` (AGGREGATE_CACHE_MB) are
 * kept, least recently used first out; 0 keeps none.
 *
 * The same lookup tells whether a backfill of the station still waits for its rollups' refresh
 * (rollup_backlog, timescale only): the answer then waits for the refresh, as rollupsCurrent does.
 */
export function createAggregateReader(db: Db, maxBytes: number): (args: AggregateArgs) => Promise<AggregateResult> {
  const entries = new Map<string, Entry>();
  let total = 0;
  const remember = (key: string, entry: Entry) => {
    const old = entries.get(key);
    if (old) total -= old.bytes;
    entries.delete(key);
    entries.set(key, entry);
    total += entry.bytes;
    for (const [oldest, value] of entries) {
      if (total <= maxBytes) break;
      entries.delete(oldest);
      total -= value.bytes;
    }
  };
  const result = (key: string, entry: Entry): AggregateResult => ({
    rows: entry.rows,
    json: () => {
      if (entry.json === undefined) {
        entry.json = aggregateJson(entry.rows);
        if (entries.get(key) === entry) remember(key, { ...entry, bytes: entry.bytes + entry.json.length });
      }
      return entry.json;
    },
  });

  return async (args) => {
    const key = [args.stationId, args.period, args.from ?? '', args.to ?? '', args.quality ?? ''].join('\u0000');
    const state = (await db.readPool.read<{ version: string; backlog: boolean }>({
      name: 'envmon_station_state',
      text: `select version::text, exists (select 1 from rollup_backlog b where b.station_id = $1) as backlog
             from station_latest where station_id = $1`,
      values: [args.stationId],
    })).rows[0];
    const cached = entries.get(key);
    if (state && !state.backlog && cached?.version === state.version) {
      remember(key, cached);
      return result(key, cached);
    }
    if (state?.backlog) await db.rollups.refresh();
    const rows = await aggregateReadings(db.readPool, args);
    const entry: Entry = { version: state?.version ?? '', rows, bytes: 64 + rows.length * 96 };
    // A station with no readings has no version: nothing to keep.
    if (state && maxBytes > 0) remember(key, entry);
    return result(key, entry);
  };
}
