import type { Db } from '../db/pool.js';
import { EncodedAnswer } from '../http/encodedAnswer.js';
import { columnsKey } from './aggregateColumns.js';
import { aggregateReadings, type AggregateArgs, type AggregateRow } from './queries.js';

/**
 * An aggregate's rows, and its answer in an output format: the answer is made by `make` the first time
 * and kept with the rows, compressed forms included.
 */
export type AggregateResult = {
  rows: readonly AggregateRow[];
  /** The station's reporting interval the answer is read against (coverage); 60 for a station without readings. */
  intervalSeconds: number;
  answer: (output: string, type: string, make: () => string | Buffer) => EncodedAnswer;
};

type Entry = { version: string; rows: readonly AggregateRow[]; intervalSeconds: number; answers: Map<string, EncodedAnswer> };

const entryBytes = (entry: Entry) => 64 + entry.rows.length * 96 + [...entry.answers.values()].reduce((sum, a) => sum + a.size, 0);

/**
 * The aggregates of a station, kept while its readings stay as they were: each answer is stored under
 * the station's data version (station_latest.version, which every write of the service changes in its
 * transaction), read before the answer is computed, and served again while a fresh look at the version
 * finds it unchanged. A write that lands while an answer is computed changes the version, so that answer
 * is never served under the new one. Researchers' notebooks and dashboards ask for the same aggregates
 * again and again; each repeat costs one indexed lookup, and its bytes, tag and compressed forms are
 * those made the first time. At most `maxBytes` (AGGREGATE_CACHE_MB) are kept, least recently used
 * first out; 0 keeps none.
 *
 * The same lookup tells whether a backfill of the station still waits for its rollups' refresh
 * (rollup_backlog, timescale only): the answer then waits for the refresh, as rollupsCurrent does.
 */
export function createAggregateReader(db: Db, maxBytes: number): (args: AggregateArgs) => Promise<AggregateResult> {
  const entries = new Map<string, { entry: Entry; bytes: number }>();
  let total = 0;
  const remember = (key: string, entry: Entry) => {
    const old = entries.get(key);
    if (old) total -= old.bytes;
    entries.delete(key);
    // Counted as it is now: forms compressed later count from its next use.
    const bytes = entryBytes(entry);
    entries.set(key, { entry, bytes });
    total += bytes;
    for (const [oldest, value] of entries) {
      if (total <= maxBytes) break;
      entries.delete(oldest);
      total -= value.bytes;
    }
  };
  const result = (key: string, entry: Entry, kept: boolean): AggregateResult => ({
    rows: entry.rows,
    intervalSeconds: entry.intervalSeconds,
    answer: (output, type, make) => {
      let answer = entry.answers.get(output);
      if (!answer) {
        const made = make();
        answer = new EncodedAnswer(typeof made === 'string' ? Buffer.from(made) : made, type);
        entry.answers.set(output, answer);
        if (kept && entries.get(key)?.entry === entry) remember(key, entry);
      }
      return answer;
    },
  });

  // On a current read replica when there is one: the version and the rows come from the same server, so
  // an answer is never kept under a version its rows do not have.
  return (args) => db.replicas.prefer(async ({ readPool }) => {
    const key = [args.stationId, args.period, args.from ?? '', args.to ?? '', args.quality ?? '', columnsKey(args.metrics)].join('\u0000');
    // The interval is part of the mark: an operator's new interval changes every bucket's coverage.
    const state = (await readPool.read<{ version: string; backlog: boolean; interval_seconds: number }>({
      name: 'envmon_station_state',
      text: `select l.version::text || '/' || s.interval_seconds as version, s.interval_seconds,
               exists (select 1 from rollup_backlog b where b.station_id = $1) as backlog
             from station_latest l join stations s on s.station_id = l.station_id where l.station_id = $1`,
      values: [args.stationId],
    })).rows[0];
    const cached = entries.get(key)?.entry;
    if (state && !state.backlog && cached?.version === state.version) {
      remember(key, cached);
      return result(key, cached, true);
    }
    // A backlog is refreshed on the primary, and read there: a replica has the refresh only once replayed.
    if (state?.backlog) await db.rollups.refresh();
    const rows = await aggregateReadings(state?.backlog ? db.readPool : readPool, args);
    const entry: Entry = { version: state?.version ?? '', rows, intervalSeconds: state?.interval_seconds ?? 60, answers: new Map() };
    // A station with no readings has no version: nothing to keep.
    const kept = Boolean(state) && maxBytes > 0;
    if (kept) remember(key, entry);
    return result(key, entry, kept);
  });
}
