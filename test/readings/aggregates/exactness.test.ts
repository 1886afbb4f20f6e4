import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { assertRollupExact, flagFilters, periods } from '../../helpers/exactness.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { assertAggregateApiExact } from '../../helpers/oracle.js';
import { assertBelowWatermarks, daysAgo, eventually, runJobs } from '../../helpers/rollups.js';

const refreshLock = 7_301_946_500;
const noRows = z.object({});

/** `count` readings `stepMinutes` apart from `start`, with a value pattern that is not uniform. */
function batch(start: string, count: number, stepMinutes: number, offset = 0) {
  const t0 = Date.parse(start);
  return Array.from({ length: count }, (_, i) => ({
    timestamp: new Date(t0 + (i * stepMinutes + offset) * 60_000).toISOString(),
    temperature_c: ((i * 7 + offset) % 90) - 20,
    humidity_rh: (i * 13) % 101,
    pm2_5: (i * 31 + offset) % 1100,
  }));
}

async function assertAllRollupsExact(env: TestEnv, station: string): Promise<void> {
  for (const period of periods) {
    for (const flags of flagFilters) await assertRollupExact(env.db, station, period, flags);
  }
}

/** A session of its own that holds the rollup refresh lock until released, as a long refresh elsewhere would. */
async function holdRefreshLock(url: string): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('select pg_advisory_lock($1)', [refreshLock]);
  return async () => {
    await client.end();
  };
}

describeEngines(
  'every acknowledged reading in every aggregate, whatever fails',
  (env) => {
    it('leaves no history out when every policy job runs, in any order, before and after a backfill older than its window', async function () {
      this.timeout(120_000);
      const { db } = env();
      const key = await stationWithKey(env(), 'ex-policy');
      // Three recent days, then the scheduler's jobs, as a production server runs them.
      assert.equal((await postBatch(env(), key, { station_id: 'ex-policy', readings: batch(daysAgo(3), 860, 5) })).status, 201);
      if (env().engine === 'timescale') {
        assert.ok((await runJobs(db.pool)) >= 1);
        await assertBelowWatermarks(db.pool, daysAgo(8));
      }
      // History from 12 to 8 days ago, older than any window of the old policies. One half is written
      // behind the service's back (as by a process killed between commit and refresh), one half through it.
      await db.pool.query(sql.type(noRows)`
        insert into stations (station_id, name, location_name, altitude_m, status)
        values ('ex-policy-raw', 'Raw', 'Test site', 100, 'active')
      `);
      await db.pool.query(sql.type(noRows)`
        insert into readings (station_id, ts, temperature_c, humidity_rh, pm2_5, quality_flag)
        select s, ${daysAgo(12)}::timestamptz + i * interval '4 minutes', (i % 70) - 10, i % 100, i % 900,
          case when i % 11 = 0 then 'suspect' else 'ok' end
        from generate_series(0, 1439) as i, unnest(array['ex-policy', 'ex-policy-raw']) as s
      `);
      assert.equal((await postBatch(env(), key, { station_id: 'ex-policy', readings: batch(daysAgo(12), 1440, 4, 2) })).status, 201);
      if (env().engine === 'timescale') {
        await runJobs(db.pool, 'desc');
        await runJobs(db.pool, 'asc');
      }
      for (const station of ['ex-policy', 'ex-policy-raw']) {
        await assertAllRollupsExact(env(), station);
        assert.ok((await assertAggregateApiExact(env().origin, db.pool, station)) > 0);
      }
    });

    it('heals a refresh that failed after commit (lock held past its timeout), with no help from the client', async function () {
      this.timeout(120_000);
      const { db } = env();
      const key = await stationWithKey(env(), 'ex-lock');
      const base = daysAgo(6);
      assert.equal((await postBatch(env(), key, { station_id: 'ex-lock', readings: batch(base, 600, 2) })).status, 201);
      const backfill = batch(base, 600, 2, 1);
      if (env().engine === 'timescale') await assertBelowWatermarks(db.pool, backfill.at(-1)!.timestamp);
      const release = await holdRefreshLock(env().databaseUrl);
      let held = true;
      try {
        const first = await postBatch(env(), key, { station_id: 'ex-lock', readings: backfill });
        // Committed is committed: 201, not a 5xx that would make the station re-send into duplicates.
        assert.equal(first.status, 201);
        assert.equal(first.body.accepted, 600);
        if (env().engine === 'timescale') {
          // The precondition of healing: nothing could refresh, so the materialised hours are stale.
          await assert.rejects(assertRollupExact(db, 'ex-lock', 'hour', ['ok', 'suspect', 'invalid']));
        }
        const again = await postBatch(env(), key, { station_id: 'ex-lock', readings: backfill });
        assert.deepEqual([again.status, again.body.accepted, again.body.duplicates], [201, 0, 600]);
        await release();
        held = false;
        const ms = await eventually(async () => {
          await assertAllRollupsExact(env(), 'ex-lock');
          await assertAggregateApiExact(env().origin, db.pool, 'ex-lock');
        }, 30_000);
        console.log(`      exact ${ms} ms after the lock was released`);
      } finally {
        if (held) await release();
      }
    });

    it('heals a refresh whose backend was terminated', async function () {
      this.timeout(120_000);
      const { db } = env();
      const key = await stationWithKey(env(), 'ex-term');
      const base = daysAgo(9);
      assert.equal((await postBatch(env(), key, { station_id: 'ex-term', readings: batch(base, 500, 3) })).status, 201);
      const release = await holdRefreshLock(env().databaseUrl);
      try {
        const posted = postBatch(env(), key, { station_id: 'ex-term', readings: batch(base, 500, 3, 1) });
        if (env().engine === 'timescale') {
          // Wait until the refresh after the commit is waiting for the lock, then end its backend.
          const terminated = await eventually(async () => {
            const n = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
              select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
              where application_name = 'envmon rollup refresh' and datname = current_database() and wait_event_type = 'Lock'
            `);
            assert.ok(n > 0);
          }, 10_000, 50);
          assert.ok(terminated >= 0);
        }
        const result = await posted;
        assert.deepEqual([result.status, result.body.accepted], [201, 500]);
      } finally {
        await release();
      }
      await eventually(() => assertAllRollupsExact(env(), 'ex-term'), 30_000);
      await assertAggregateApiExact(env().origin, db.pool, 'ex-term');
    });

    it('keeps an override over readings written while it runs, and over a later backfill into its range', async function () {
      this.timeout(120_000);
      const { db } = env();
      const key = await stationWithKey(env(), 'ex-flag');
      const base = daysAgo(5);
      const from = new Date(Date.parse(base) + 30 * 3_600_000).toISOString();
      const to = new Date(Date.parse(base) + 66 * 3_600_000).toISOString();
      // Four clients send overlapping windows while the operator marks the middle of them invalid.
      const sends = [0, 1, 2, 3].map((c) => postBatch(env(), key, { station_id: 'ex-flag', readings: batch(base, 1200, 3 + (c % 2), c % 2) }));
      const override = recordOverride(db, { stationId: 'ex-flag', from, to, flag: 'invalid', reason: 'sensor head replaced' });
      const results = await Promise.all(sends);
      assert.deepEqual(results.map((r) => r.status), [201, 201, 201, 201]);
      await override;
      // A later backfill from the broken sensor, into the range.
      const late = batch(from, 300, 7, 1).filter((r) => r.timestamp <= to);
      assert.equal((await postBatch(env(), key, { station_id: 'ex-flag', readings: late })).status, 201);
      const notInvalid = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from readings where station_id = 'ex-flag' and ts between ${from} and ${to} and quality_flag <> 'invalid'
      `);
      assert.equal(notInvalid, 0);
      const inRange = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from readings where station_id = 'ex-flag' and ts between ${from} and ${to}
      `);
      assert.ok(inRange > 600, `${inRange} readings in the override's range`);
      // Read after the 201s, as any client would; then the rollups themselves, once refreshed.
      await assertAggregateApiExact(env().origin, db.pool, 'ex-flag');
      await db.rollups.refresh();
      await assertAllRollupsExact(env(), 'ex-flag');
    });

    it('leaves no bucket stale after a change of many buckets that ends exactly on one\'s start (override, deletion, backfill)', async function () {
      // TimescaleDB 2.28 refreshing in batches stranded that last bucket (timescale/timescaledb#10221).
      this.timeout(120_000);
      const { db } = env();
      const key = await stationWithKey(env(), 'ex-edge');
      // Every 8 hours over 20 days from a midnight: a reading on each midnight, every edge of the changes below.
      const start = daysAgo(24);
      const every8h = (from: string, count: number, offset = 0) => batch(from, count, 480, offset);
      assert.equal((await postBatch(env(), key, { station_id: 'ex-edge', readings: every8h(start, 60) })).status, 201);
      const midnight = (day: number) => new Date(Date.parse(start) + day * 86_400_000).toISOString();
      // Read (which refreshes the backfill) before each change, so that a refresh has only that change to take in.
      assert.ok((await assertAggregateApiExact(env().origin, db.pool, 'ex-edge')) > 0, 'stored');
      await recordOverride(db, { stationId: 'ex-edge', from: midnight(2), to: midnight(7), flag: 'invalid', reason: 'edge' });
      await assertAllRollupsExact(env(), 'ex-edge');
      assert.ok((await assertAggregateApiExact(env().origin, db.pool, 'ex-edge')) > 0, 'override');
      const removed = await runCli(['readings', 'delete', '--station', 'ex-edge', '--from', midnight(9), '--to', midnight(15)], { DATABASE_URL: env().databaseUrl });
      assert.equal(removed.code, 0, removed.stderr);
      await assertAllRollupsExact(env(), 'ex-edge');
      assert.ok((await assertAggregateApiExact(env().origin, db.pool, 'ex-edge')) > 0, 'deletion');
      // A backfill of those days again, an hour later each, ending on the last midnight deleted.
      const again = [...every8h(midnight(9), 18, 60), { timestamp: midnight(15), temperature_c: 3, humidity_rh: 50, pm2_5: 7 }];
      assert.equal((await postBatch(env(), key, { station_id: 'ex-edge', readings: again })).status, 201);
      // Asked for at once (a backfill's refresh is awaited by the answer), then in the rollups themselves.
      assert.ok((await assertAggregateApiExact(env().origin, db.pool, 'ex-edge')) > 0, 'backfill');
      await assertAllRollupsExact(env(), 'ex-edge');
    });

    it('records the reason of an override and lists it (envmon flag --reason, --list)', async function () {
      this.timeout(60_000);
      await stationWithKey(env(), 'ex-cli');
      const settings = { DATABASE_URL: env().databaseUrl };
      const flagged = await runCli(
        ['flag', '--station', 'ex-cli', '--from', '2026-01-01', '--to', '2026-01-02T12:00:00Z', '--flag', 'suspect', '--reason', 'drift after cleaning'],
        settings,
      );
      assert.equal(flagged.code, 0, flagged.stderr);
      const listed = await runCli(['flag', '--list', 'ex-cli'], settings);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /2026-01-01T00:00:00.000Z\t2026-01-02T12:00:00.000Z\tsuspect\t.*\tdrift after cleaning/);
      const unknown = await runCli(['flag', '--list', 'no-such-station'], settings);
      assert.equal(unknown.code, 2);
    });
  },
  { ROLLUP_HEAL_SECONDS: '1', STATEMENT_TIMEOUT_MS: '1500' },
);

/** A database whose default zone is St. John's (UTC-3:30, daylight saving), reached through a URL that carries its own options. */
async function stJohnsDatabase(url: string): Promise<string> {
  const u = new URL(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`alter database ${u.pathname.slice(1)} set timezone = 'America/St_Johns'`);
  await client.end();
  u.searchParams.set('options', '-c statement_timeout=20000');
  return u.toString();
}

describeEngines(
  'UTC whatever the database zone and the URL options',
  (env) => {
    it('the precondition: a plain session here is in St. John\'s time, the service\'s in UTC', async () => {
      const client = new pg.Client({ connectionString: env().databaseUrl });
      await client.connect();
      try {
        assert.equal((await client.query('show timezone')).rows[0].TimeZone, 'America/St_Johns');
      } finally {
        await client.end();
      }
      const zone = await env().db.pool.oneFirst(sql.type(z.object({ zone: z.string() }))`select current_setting('TimeZone') as zone`);
      assert.equal(zone, 'UTC');
    });

    it('buckets, date filters and overrides across a month end and a daylight-saving change are UTC', async function () {
      this.timeout(120_000);
      const { db } = env();
      const key = await stationWithKey(env(), 'tz-01');
      // 2026-10-30 to 2026-11-03: October ends, and St. John's leaves daylight saving on 1 November.
      const readings = batch('2026-10-30T00:00:00Z', 4 * 144, 10);
      assert.equal((await postBatch(env(), key, { station_id: 'tz-01', readings })).status, 201);
      await env().db.rollups.refresh();
      const flagged = await runCli(
        ['flag', '--station', 'tz-01', '--from', '2026-10-31T20:00:00Z', '--to', '2026-11-01T05:00:00Z', '--flag', 'invalid', '--reason', 'tz test'],
        { DATABASE_URL: env().databaseUrl },
      );
      assert.equal(flagged.code, 0, flagged.stderr);
      assert.match(flagged.stdout, /^\d+ readings of tz-01 flagged invalid/);
      await assertAllRollupsExact(env(), 'tz-01');
      for (const range of [{}, { from: '2026-10-31', to: '2026-10-31' }, { from: '2026-11-01', to: '2026-11-02' }, { from: '2026-10-31' }]) {
        await assertAggregateApiExact(env().origin, db.pool, 'tz-01', range);
      }
      const download = await env().get('/api/v1/data/download/?station=tz-01&from_date=2026-11-01&to_date=2026-11-01');
      const rows = (await download.text()).split('\n').filter((line) => /^\d{4}-/.test(line));
      assert.equal(rows.length, 144);
      assert.ok(rows[0]!.startsWith('2026-11-01T00:00:00.000Z'), rows[0]);
    });
  },
  {},
  stJohnsDatabase,
);
