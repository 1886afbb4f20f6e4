import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestApp, type TestEnv } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { testServer } from '../helpers/server.js';
import { useStandby } from '../helpers/standby.js';

const maxLagSeconds = 3;

/** `count` one-minute readings from `start`. */
const readings = (count: number, start: string) =>
  Array.from({ length: count }, (_, i) => ({ timestamp: new Date(Date.parse(start) + i * 60_000).toISOString(), temperature_c: 10 + i / 10, pm2_5: i % 30 }));

type ReplicaHealth = { name: string; state: string; lag_seconds: number | null };

async function replicaHealth(env: TestEnv): Promise<ReplicaHealth> {
  const { body } = await env.getJson('/api/v1/health/');
  assert.equal(body.replicas.length, 1);
  // Public: named by its place in DATABASE_READ_URL, never by its address.
  assert.equal(body.replicas[0].name, 'replica 1');
  assert.ok(!JSON.stringify(body).includes('127.0.0.1'), 'no address published');
  return body.replicas[0] as ReplicaHealth;
}

async function waitForReplica(env: TestEnv, state: string, timeoutMs = 20_000): Promise<ReplicaHealth> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const health = await replicaHealth(env);
    if (health.state === state) return health;
    if (Date.now() > deadline) throw new Error(`the replica stayed ${JSON.stringify(health)}, not ${state}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The readings of a station's download, as the timestamps of its CSV rows. */
async function downloadedTimes(env: TestEnv, station: string): Promise<string[]> {
  const response = await env.get(`/api/v1/data/download/?station=${station}`);
  assert.equal(response.status, 200);
  return (await response.text()).split('\n').filter((l) => /^\d{4}-/.test(l)).map((l) => l.split(',')[0]!);
}

describe('read replicas', function () {
  const standby = useStandby('read replicas');

  for (const engine of testServer().engines) {
    describe(`a streaming replica [${engine}]`, function () {
      let env: TestEnv;
      let key: string;
      const station = `rep-${engine}`;
      before(async function () {
        this.timeout(60_000);
        env = await startTestApp(engine, (url) => ({ DATABASE_READ_URL: standby()!.urlOf(url), REPLICA_MAX_LAG_SECONDS: String(maxLagSeconds) }));
        key = await stationWithKey(env, station);
        await waitForReplica(env, 'current');
      });
      after(async function () {
        this.timeout(60_000);
        // As it was, whatever a failed test left: running and replaying.
        await standby()?.thaw();
        await standby()?.start();
        await standby()?.resumeReplay().catch(() => {});
        await env?.close();
      });

      it('serves downloads from the replica while latest sees every write on the primary at once', async function () {
        this.timeout(60_000);
        const first = readings(60, '2026-04-01T00:00:00Z');
        assert.equal((await postBatch(env, key, { station_id: station, readings: first })).status, 201);
        const caughtUp = Date.now() + 10_000;
        while ((await downloadedTimes(env, station)).length < 60 && Date.now() < caughtUp) await new Promise((r) => setTimeout(r, 50));
        assert.equal((await downloadedTimes(env, station)).length, 60);
        // A backfill's rollups are refreshed on the primary when first read (timescale); the replica
        // serves aggregates once it has that refresh too.
        assert.deepEqual((await env.getJson(`/api/v1/data/aggregate/?station=${station}&period=hour`)).body.results.map((r: { count: number }) => r.count), [60]);
        const onReplica = new pg.Client({ connectionString: standby()!.urlOf(env.databaseUrl) });
        await onReplica.connect();
        try {
          const replayed = Date.now() + 10_000;
          while ((await onReplica.query('select 1 from rollup_backlog')).rowCount! > 0 && Date.now() < replayed) await new Promise((r) => setTimeout(r, 50));
        } finally {
          await onReplica.end();
        }

        // The replica stops replaying: what the primary takes now is not on it.
        await standby()!.pauseReplay();
        const second = readings(10, '2026-04-01T01:00:00Z');
        assert.equal((await postBatch(env, key, { station_id: station, readings: second })).status, 201);
        const latest = await env.getJson(`/api/v1/data/latest/?station=${station}`);
        assert.equal(latest.body.timestamp, '2026-04-01T01:09:00.000Z', 'latest reads the primary');
        assert.equal((await downloadedTimes(env, station)).length, 60, 'the download came from the replica, which has not replayed the second batch');
        const hourly = await env.getJson(`/api/v1/data/aggregate/?station=${station}&period=hour`);
        assert.deepEqual(hourly.body.results.map((r: { count: number }) => r.count), [60], 'so did the aggregate');

        // Beyond the lag limit, reads go to the primary.
        const lagging = await waitForReplica(env, 'lagging', 15_000);
        assert.ok(lagging.lag_seconds! > maxLagSeconds, JSON.stringify(lagging));
        assert.equal((await downloadedTimes(env, station)).length, 70);
        const hourlyNow = await env.getJson(`/api/v1/data/aggregate/?station=${station}&period=hour`);
        assert.deepEqual(hourlyNow.body.results.map((r: { count: number }) => r.count), [60, 10]);

        // Caught up, it serves again, with everything.
        await standby()!.resumeReplay();
        const current = await waitForReplica(env, 'current');
        assert.ok(current.lag_seconds! <= maxLagSeconds, JSON.stringify(current));
        assert.equal((await downloadedTimes(env, station)).length, 70);

        // Another station's four months: the replica reads the hourly answer's 2,900 hours through COPY.
        const long = 'rep-long';
        const longKey = await stationWithKey(env, long);
        for (const batch of [readings(1, '2025-12-01T00:00:00Z'), readings(60, '2026-04-01T00:00:00Z')]) {
          assert.equal((await postBatch(env, longKey, { station_id: long, readings: batch })).status, 201);
        }
        const longReplayed = Date.now() + 10_000;
        while ((await downloadedTimes(env, long)).length < 61 && Date.now() < longReplayed) await new Promise((r) => setTimeout(r, 50));
        assert.deepEqual((await env.getJson(`/api/v1/data/aggregate/?station=${long}&period=hour`)).body.results.map((r: { count: number }) => r.count), [1, 60]);
      });

      it('keeps answering, never with a 5xx, while the replica is stopped and started again', async function () {
        this.timeout(120_000);
        const paths = [
          `/api/v1/data/download/?station=${station}`,
          `/api/v1/data/historical/?station=${station}&hours=720`,
          `/api/v1/data/aggregate/?station=${station}&period=day`,
          `/api/v1/data/download/?station=${station}&output=parquet`,
        ];
        const statuses: number[] = [];
        let reading = true;
        const reader = (async () => {
          while (reading) {
            for (const path of paths) {
              const response = await env.get(path);
              await response.arrayBuffer();
              statuses.push(response.status);
            }
          }
        })();
        await new Promise((resolve) => setTimeout(resolve, 300));
        await standby()!.stop();
        const unreachable = await waitForReplica(env, 'unreachable');
        assert.equal(unreachable.lag_seconds, null);
        assert.equal((await downloadedTimes(env, station)).length, 70, 'the primary serves meanwhile');
        await standby()?.start();
        await waitForReplica(env, 'current', 30_000);
        await new Promise((resolve) => setTimeout(resolve, 300));
        reading = false;
        await reader;
        assert.ok(statuses.length >= paths.length * 2, `${statuses.length} reads`);
        assert.deepEqual([...new Set(statuses)], [200], `statuses seen: ${[...new Set(statuses)].join(', ')}`);
      });

      it('sets a replica that hangs aside within seconds, and serves from the primary meanwhile', async function () {
        this.timeout(60_000);
        await standby()!.freeze();
        try {
          const frozen = Date.now();
          await waitForReplica(env, 'unreachable', 10_000);
          assert.ok(Date.now() - frozen < 5_000, `set aside after ${Date.now() - frozen} ms`);
          const started = Date.now();
          for (const path of [`/api/v1/data/download/?station=${station}`, `/api/v1/data/aggregate/?station=${station}&period=hour`, `/api/v1/data/historical/?station=${station}&hours=720`]) {
            const response = await env.get(path);
            await response.arrayBuffer();
            assert.equal(response.status, 200, path);
          }
          assert.ok(Date.now() - started < 2_000, `answered in ${Date.now() - started} ms`);
        } finally {
          await standby()?.thaw();
        }
        await waitForReplica(env, 'current', 30_000);
      });
    });
  }
});
