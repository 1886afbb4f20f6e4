import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { issueKey } from '../../src/stations/keys.js';
import { describeEngines } from '../helpers/app.js';
import { spawnServe, type ServeProcess } from '../helpers/cli.js';
import { assertAggregateApiExact } from '../helpers/oracle.js';
import { addStation } from '../helpers/readings.js';
import { daysAgo, eventually } from '../helpers/rollups.js';

const appName = 'envmon-chaos';
const stations = ['chaos-a', 'chaos-b'];
const clientsPerStation = 2;
const batchesPerClient = 25;
const readingsPerBatch = 300;

/**
 * Client c's batch b: ten hours of two-minute readings, placed so that batches of one station overlap; every
 * fourth ends on the first instant of an earlier month, a second after it or a second before it (the ranges
 * whose monthly refresh TimescaleDB can skip).
 */
function plannedBatch(c: number, b: number) {
  const now = new Date();
  const monthEnd = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2 - (b % 3), 1) + ((c % 3) - 1) * 1_000;
  const start = b % 4 === 3
    ? monthEnd - (readingsPerBatch - 1) * 120_000
    : Date.parse(daysAgo(20)) + ((b * 7 + c * 3) % 200) * 3_600_000;
  return Array.from({ length: readingsPerBatch }, (_, i) => {
    const ts = start + i * 120_000;
    const minute = ts / 60_000;
    return {
      timestamp: new Date(ts).toISOString(),
      temperature_c: (minute % 97) - 30,
      humidity_rh: minute % 100,
      pm2_5: (minute * 7) % 1200,
    };
  });
}

describeEngines('chaos: overlapping backfill while connections are terminated and the server is killed', (env) => {
  it('ends with every acknowledged reading stored and every aggregate equal to a GROUP BY', async function () {
    this.timeout(300_000);
    const { db } = env();
    const keys = new Map<string, string>();
    for (const station of stations) {
      await addStation(db, station);
      keys.set(station, (await issueKey(db.pool, station)).key);
    }
    const url = new URL(env().databaseUrl);
    url.searchParams.set('application_name', appName);
    const settings = { DATABASE_URL: url.toString(), RATE_LIMIT_PER_MINUTE: '0', ROLLUP_HEAL_SECONDS: '1' };

    let serve: ServeProcess = await spawnServe(settings);
    let restarting = false;
    let unexpectedExits = 0;
    const watch = (s: ServeProcess) => s.child.once('exit', () => { if (!restarting) unexpectedExits++; });
    watch(serve);

    const totalBatches = stations.length * clientsPerStation * batchesPerClient;
    let batchesDone = 0;
    const statuses = new Map<number | string, number>();
    let resends = 0;
    const acknowledged = new Map<string, Set<string>>(stations.map((s) => [s, new Set()]));
    const deadline = Date.now() + 200_000;
    const client = async (c: number) => {
      const station = stations[c % stations.length]!;
      for (let b = 0; b < batchesPerClient; b++) {
        const readings = plannedBatch(c, b);
        for (let attempt = 0; ; attempt++) {
          assert.ok(Date.now() < deadline, `client ${c} batch ${b} not acknowledged in time`);
          if (attempt > 0) resends++;
          let status: number | string;
          try {
            const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json', Authorization: `Token ${keys.get(station)}` },
              body: JSON.stringify({ station_id: station, readings }),
            });
            status = response.status;
            await response.arrayBuffer();
          } catch (error) {
            status = (error as { cause?: { code?: string } }).cause?.code ?? 'network';
          }
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status === 201) {
            for (const r of readings) acknowledged.get(station)!.add(r.timestamp);
            batchesDone++;
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 50 + Math.random() * 100));
        }
      }
    };

    // Every 300 ms, end every connection the service holds; a third and two thirds of the way through,
    // kill the server outright and start it again.
    let terminated = 0;
    let restarts = 0;
    let stop = false;
    const chaos = (async () => {
      const killAt = [totalBatches / 3, (2 * totalBatches) / 3];
      while (!stop) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        if (killAt.length > 0 && batchesDone >= killAt[0]!) {
          killAt.shift();
          restarting = true;
          serve.child.kill('SIGKILL');
          await serve.stop();
          serve = await eventuallyStarted(() => spawnServe(settings));
          restarting = false;
          watch(serve);
          restarts++;
          continue;
        }
        terminated += await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
          select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
          where application_name = ${appName} and datname = current_database()
        `);
      }
    })();

    try {
      await Promise.all(Array.from({ length: stations.length * clientsPerStation }, (_, c) => client(c)));
    } finally {
      stop = true;
      await chaos;
    }
    const lastAck = Date.now();
    try {
      assert.equal(unexpectedExits, 0, 'the server exited by itself');
      // Every acknowledged reading is stored.
      let readings = 0;
      for (const [station, timestamps] of acknowledged) {
        const stored = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
          select count(*)::int as n from readings where station_id = ${station} and ts = any(${sql.array([...timestamps], 'timestamptz')})
        `);
        assert.equal(stored, timestamps.size, `${station}: acknowledged readings stored`);
        readings += timestamps.size;
      }
      // With no client re-sending, the service converges by itself.
      const ms = await eventually(async () => {
        for (const station of stations) await assertAggregateApiExact(serve.url, db.pool, station);
      }, 90_000, 200);
      console.log(
        `      ${readings} readings in ${totalBatches} batches; ${resends} re-sends; ` +
          `${terminated} backends terminated; ${restarts} restarts; statuses ${JSON.stringify(Object.fromEntries(statuses))}; ` +
          `exact ${((Date.now() - lastAck) / 1000).toFixed(1)} s after the last 201 (${ms} ms of checking)`,
      );
      assert.ok(terminated > 0, 'backends were terminated');
      assert.equal(restarts, 2);
    } finally {
      await serve.stop();
    }
  });
});

/** Starting can itself meet a terminated connection: try again a few times. */
async function eventuallyStarted(start: () => Promise<ServeProcess>): Promise<ServeProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt >= 5) throw error;
    }
  }
}
