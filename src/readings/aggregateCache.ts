import type { Db, PgPool } from '../db/pool.js';
import { EncodedAnswer } from '../http/encodedAnswer.js';
import { columnsKey } from './aggregateColumns.js';
import type { AggregateArgs } from './queries.js';

/** An aggregate in one output format, and how many periods it has. */
export type AggregateAnswer = { answer: EncodedAnswer; periods: number };

/**
 * How an output format of an aggregate is made: `make` reads it from `pool` for a station reporting
 * every `intervalSeconds` (coverage), on the server the station's data version was read from.
 */
export type AggregateOutput = {
  name: string;
  type: string;
  make: (pool: PgPool, intervalSeconds: number) => Promise<{ body: string | Buffer; periods: number }>;
};

type Entry = { version: string; answers: Map<string, AggregateAnswer> };

const entryBytes = (entry: Entry) => 64 + [...entry.answers.values()].reduce((sum, a) => sum + a.answer.size, 0);

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
export function createAggregateReader(db: Db, maxBytes: number): (args: AggregateArgs, output: AggregateOutput) => Promise<AggregateAnswer> {
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

  // On a current read replica when there is one: the version and the answer come from the same server, so
  // an answer is never kept under a version its rows do not have.
  return (args, output) => db.replicas.prefer(async ({ readPool }) => {
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
    const current = state && !state.backlog && cached?.version === state.version ? cached : undefined;
    const kept = current?.answers.get(output.name);
    if (current) remember(key, current);
    if (kept) return kept;
    // A backlog is refreshed on the primary, and read there: a replica has the refresh only once replayed.
    if (state?.backlog) await db.rollups.refresh();
    const made = await output.make(state?.backlog ? db.readPool : readPool, state?.interval_seconds ?? 60);
    const answer = { answer: new EncodedAnswer(typeof made.body === 'string' ? Buffer.from(made.body) : made.body, output.type), periods: made.periods };
    // A station with no readings has no version: nothing to keep.
    if (state && maxBytes > 0) {
      const entry = current ?? { version: state.version, answers: new Map() };
      entry.answers.set(output.name, answer);
      remember(key, entry);
    }
    return answer;
  });
}
