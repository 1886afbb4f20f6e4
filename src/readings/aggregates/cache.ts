import type { Db, PgPool } from '../../db/pool.js';
import { retryWhileMoved } from '../../db/rollupsCurrent.js';
import { EncodedAnswer } from '../../http/encodedAnswer.js';
import type { AnswerPart, SharedBytes } from '../../http/answerParts.js';
import { columnsKey } from './columns.js';
import type { AggregateArgs, StationSeen } from './queries.js';
import { prepared } from '../../db/prepared.js';

/** An aggregate in one output format, and how many periods it has. */
/**
 * An answer and its number of periods. `exactAt` is when the readings it sums were last seen unchanged;
 * `asOf` is set only on an answer served while a backfill of the station waits for its refresh: it is the
 * last exact answer, exact as of that time, and leaves out what arrived since.
 */
export type AggregateAnswer = { answer: EncodedAnswer; periods: number; exactAt: Date; asOf?: Date };

// How long an aggregate waits for the refresh of its station's backfill when it has an earlier exact answer
// to give instead: far beyond a refresh's usual second, so that an answer read after a backfill's 201
// holds it, and short enough that a refresh stuck behind a lock or failing does not hold the reader.
const backlogWaitMs = 10_000;

/**
 * Whether the rollups' refresh finished within `ms`; false when it took longer or failed (a connection cut
 * under it). Without an earlier answer to give, the wait has no bound, and a failed refresh is tried once more.
 */
async function refreshedWithin(db: Db, ms: number): Promise<boolean> {
  if (ms === Infinity) {
    await db.rollups.refresh().catch(() => db.rollups.refresh());
    return true;
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([db.rollups.refresh().then(() => true, () => false), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The part of an answer made of the periods before `before` (epoch ms), kept while they stay settled: the
 * same bytes in every answer made from it, compressed once.
 */
export type SettledPart = { before: number; periods: number; bytes: SharedBytes };

/**
 * How an output format of an aggregate is made: `make` reads it from `pool` (the server the station's
 * data version was read from) for a station reporting every `intervalSeconds` (coverage). `settled`
 * says from where the station's periods may still change: a format that can reuse its earlier periods
 * gives back its part before `settled.before`, with what its statement's snapshot says of the station
 * (`seen`), and is handed that part again (`kept`, ending at or before `settled.before`) while
 * those periods stay as they were.
 */
export type AggregateOutput = {
  name: string;
  type: string;
  make: (pool: PgPool, intervalSeconds: number, settled: { before: number; kept?: SettledPart }) =>
    Promise<{ body: string | Buffer | AnswerPart[]; periods: number; settled?: SettledPart; seen?: StationSeen }>;
};

type Entry = {
  version: string;
  answers: Map<string, AggregateAnswer>;
  /** Each format's settled part, under the station's settled mark it was made at. */
  settled: Map<string, { mark: string; part: SettledPart }>;
};

// A settled part may be a view of a larger buffer (the whole output of the statement that made it): it
// holds all of that, and its deflate once made.
const entryBytes = (entry: Entry) =>
  64 + [...entry.answers.values()].reduce((sum, a) => sum + a.answer.size, 0) + [...entry.settled.values()].reduce((sum, s) => sum + s.part.bytes.size, 0);

const dayMs = 86_400_000;

/**
 * The first period of `period` that may still change, when the station's readings have changed only from
 * `settledBefore` (the start of a UTC day) on: that day's first hour or the day, or the week (weeks start
 * on Monday) or month it falls in.
 */
function firstUnsettled(period: AggregateArgs['period'], settledBefore: number): number {
  const day = new Date(settledBefore);
  if (period === 'week') return settledBefore - ((day.getUTCDay() + 6) % 7) * dayMs;
  if (period === 'month') return Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), 1);
  return settledBefore;
}

/** What an answer is kept under: the station's data version and interval, and where its settled part ends. */
const stationState = prepared<{
  version: string; backlog: boolean; interval_seconds: number; settled_version: string; settled_before: number;
}>('envmon_station_state', `
  select l.version::text || '/' || s.interval_seconds as version, s.interval_seconds,
         exists (select 1 from rollup_backlog b where b.station_id = $1) as backlog,
         l.settled_version::text as settled_version,
         (extract(epoch from l.settled_before) * 1000)::float8 as settled_before
  from station_latest l join stations s on s.station_id = l.station_id where l.station_id = $1`);

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
 * (rollup_backlog, timescale only): the answer then waits for the refresh, as readCurrent does.
 *
 * A station posting every minute changes its version with each batch, but not its settled version
 * (station_latest.settled_version, migrations 0020 and 0023): while that stands, its periods before
 * the settled_before of any moment are as they were then, and a JSON answer is made again from its kept
 * part and its periods from that part's end on, and kept to the settled_before of now (the day of the
 * station's newest reading): for a year of hourly periods, about 24 of 8,760 are made again. The
 * statement reads the settled version and the backlog in its own snapshot: when a write reaching back
 * or a backfill landed after the state was read, the answer is made again.
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
  const attempt = (args: AggregateArgs, output: AggregateOutput, last: boolean) => db.replicas.prefer(async ({ readPool }) => {
    const key = [args.stationId, args.period, args.from ?? '', args.to ?? '', args.quality ?? '', columnsKey(args.metrics), args.tz ?? '', args.percentiles?.join(',') ?? '', args.minCoverage ?? ''].join('\u0000');
    // The interval is part of the version: an operator's new interval changes every bucket's coverage.
    const state = (await stationState.rows(readPool, [args.stationId]))[0];
    const seenAt = new Date();
    const cached = entries.get(key)?.entry;
    const current = state && !state.backlog && cached?.version === state.version ? cached : undefined;
    const answered = current?.answers.get(output.name);
    if (current) remember(key, current);
    if (answered) {
      answered.exactAt = seenAt;
      return answered;
    }
    // A backlog is refreshed on the primary, and read there: a replica has the refresh only once replayed.
    // When the refresh fails (its connection cut) or is stuck, an earlier exact answer is given, saying as
    // of when, rather than failing with it.
    if (state?.backlog) {
      const earlier = cached?.answers.get(output.name);
      if (!(await refreshedWithin(db, earlier ? backlogWaitMs : Infinity)) && earlier) return { ...earlier, asOf: earlier.exactAt };
    }
    // Without a version (no readings yet) nothing is settled: before -Infinity. The interval is part of
    // the mark, as of the version.
    const mark = state ? `${state.settled_version}/${state.interval_seconds}` : '';
    const before = state ? firstUnsettled(args.period, state.settled_before) : -Infinity;
    const settled = cached?.settled.get(output.name);
    const kept = state && settled?.mark === mark && settled.part.before <= before ? settled.part : undefined;
    const made = await output.make(state?.backlog ? db.readPool : readPool, state?.interval_seconds ?? 60, { before, kept });
    // What the statement's snapshot says of the station, against the state read before it: a batch reaching
    // back landed between them (a kept part is then older than the periods made after it), or a backfill
    // still waits for its refresh (timescale: its rollups are not yet the readings').
    const moved = state && made.seen && (made.seen.settledVersion !== state.settled_version || made.seen.backlog);
    if (moved && !last) return undefined;
    const answer = { answer: new EncodedAnswer(typeof made.body === 'string' ? Buffer.from(made.body) : made.body, output.type), periods: made.periods, exactAt: seenAt };
    // A station with no readings has no version: nothing to keep.
    if (state && !moved && maxBytes > 0) {
      const entry: Entry = current ?? { version: state.version, answers: new Map(), settled: new Map() };
      entry.answers.set(output.name, answer);
      if (made.settled) entry.settled.set(output.name, { mark, part: made.settled });
      remember(key, entry);
    }
    return answer;
  });

  // Made again from a fresh look at the station when it moved under the answer: a backfill's refresh is
  // then waited for, and a kept part of an older mark is not used. A last try that moved keeps nothing.
  return (args, output) => retryWhileMoved((last) => attempt(args, output, last));
}
