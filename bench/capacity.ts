// bench/capacity: how many stations sending one reading a minute one primary sustains, and how far a
// streaming replica falls behind under that load. Stations post their readings from
// BENCH_CAPACITY_CLIENTS (32) keep-alive connections for BENCH_CAPACITY_SECONDS (15) per shape: one
// reading per request (a station that sends each minute) to one and to two `envmon serve` instances,
// and ten per request (a station that sends every ten minutes) to one; the instances read from a hot
// standby of the database, and keep the rollups as always. Stations sustained = requests/s x 60 x
// readings per request. The limit, in the same run: one-row INSERT transactions into
// readings (its triggers and indexes included) from as many connections, for as long. Replica lag:
// four times a second a reading is posted and the replica polled until it holds it (201 to visible on
// the replica), beside the lag /health/ reports.
import pg from 'pg';
import { startStandby } from '../test/helpers/standby.js';
import { eachEngine, percentile, startServe, stationsWithKeys } from './lib.js';

const clients = Number(process.env.BENCH_CAPACITY_CLIENTS ?? 32);
const seconds = Number(process.env.BENCH_CAPACITY_SECONDS ?? 15);
const shapes = [{ instances: 1, readings: 1 }, { instances: 2, readings: 1 }, { instances: 1, readings: 10 }];
const stationCount = 1000;

const adminOf = (databaseUrl: string) => Object.assign(new URL(databaseUrl), { pathname: '/postgres' }).toString();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One-row INSERT transactions into readings from `connections` connections for `ms`: the database's own rate. */
async function rawInserts(databaseUrl: string, connections: number, ms: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  let done = 0;
  const until = Date.now() + ms;
  const start = Date.parse('2024-01-01T00:00:00Z');
  await Promise.all(Array.from({ length: connections }, async (_, c) => {
    const client = await pool.connect();
    try {
      for (let i = 0; Date.now() < until; i++) {
        await client.query('insert into readings (station_id, ts, temperature_c, humidity_rh, pm2_5, quality_flag) values ($1, $2, 20.5, 55, 8, \'ok\')',
          [`cap-${c % stationCount}`, new Date(start + (i * connections + c) * 60_000).toISOString()]);
        done++;
      }
    } finally {
      client.release();
    }
  }));
  await pool.end();
  return done / (ms / 1000);
}

await eachEngine('capacity', async (engine, databaseUrl) => {
  const keys = await stationsWithKeys(databaseUrl, Array.from({ length: stationCount }, (_, s) => `cap-${s}`));

  const standby = await startStandby(adminOf(databaseUrl));
  if (typeof standby === 'string') {
    console.log(`${engine}: no replica can be made here (${standby}); capacity without one`);
  }
  const settings = {
    ...(typeof standby === 'string' ? {} : { DATABASE_READ_URL: standby.urlOf(databaseUrl), REPLICA_MAX_LAG_SECONDS: '5' }),
    INGEST_POOL_SIZE: '8',
  };
  const serves = [await startServe(databaseUrl, settings), await startServe(databaseUrl, settings)];
  const replica = typeof standby === 'string' ? undefined : new pg.Client({ connectionString: standby.urlOf(databaseUrl) });
  await replica?.connect();
  const results: Record<string, unknown>[] = [];
  try {
    const raw = await rawInserts(databaseUrl, clients, Math.min(seconds, 10) * 1000);
    // Live readings, as stations post them: from an hour ago (on timescale above the rollups' horizon,
    // so no backfill), a second apart so that no station runs into the future however fast it posts.
    const next = new Array<number>(stationCount).fill(Math.floor(Date.now() / 1000) * 1000 - 3_600_000);
    let turn = 0;
    const post = async (url: string, s: number, count: number) => {
      const readings = Array.from({ length: count }, () => ({ timestamp: new Date((next[s]! += 1000)).toISOString(), temperature_c: 20.5, humidity_rh: 55, pm2_5: 8 }));
      const response = await fetch(`${url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${keys[s]}` },
        body: JSON.stringify({ station_id: `cap-${s}`, readings }),
      });
      await response.arrayBuffer();
      if (response.status !== 201) throw new Error(`ingest ${response.status}`);
      return readings.at(-1)!.timestamp;
    };

    for (const shape of shapes) {
      let running = true;
      let counting = false;
      let posted = 0;
      const latencies: number[] = [];
      const loadClients = Array.from({ length: clients }, async (_, c) => {
        const url = serves[c % shape.instances]!.url;
        while (running) {
          const s = (turn++ % (stationCount - 1)) + 1;
          const started = performance.now();
          await post(url, s, shape.readings);
          if (counting) {
            posted++;
            latencies.push(performance.now() - started);
          }
        }
      });
      // Station cap-0 is the probe: its readings are looked for on the replica.
      const delays: number[] = [];
      const healthLags: number[] = [];
      const probe = (async () => {
        while (running) {
          await sleep(250);
          if (!counting) continue;
          const health = await (await fetch(`${serves[0]!.url}/api/v1/health/`)).json() as { replicas: { lag_seconds: number | null }[] };
          if (health.replicas[0]?.lag_seconds != null) healthLags.push(health.replicas[0].lag_seconds);
          if (!replica) continue;
          const timestamp = await post(serves[0]!.url, 0, 1);
          const answered = performance.now();
          while ((await replica.query('select 1 from readings where station_id = $1 and ts = $2', ['cap-0', timestamp])).rowCount === 0) await sleep(1);
          delays.push(performance.now() - answered);
        }
      })();
      await sleep(3_000);
      counting = true;
      const started = performance.now();
      await sleep(seconds * 1000);
      counting = false;
      const elapsed = (performance.now() - started) / 1000;
      running = false;
      await Promise.all([...loadClients, probe]);

      const rate = posted / elapsed;
      latencies.sort((a, b) => a - b);
      delays.sort((a, b) => a - b);
      healthLags.sort((a, b) => a - b);
      const row = {
        engine, ...shape, clients, seconds, requests_per_s: Math.round(rate), readings_per_s: Math.round(rate * shape.readings),
        stations_at_one_a_minute: Math.round(rate * shape.readings * 60),
        p50_ms: +percentile(latencies, 50).toFixed(1), p99_ms: +percentile(latencies, 99).toFixed(1),
        raw_insert_tx_per_s: Math.round(raw), requests_vs_raw: +(rate / raw).toFixed(2),
        replica_delay_p50_ms: delays.length ? +percentile(delays, 50).toFixed(1) : null,
        replica_delay_p99_ms: delays.length ? +percentile(delays, 99).toFixed(1) : null,
        replica_delay_max_ms: delays.length ? +delays.at(-1)!.toFixed(1) : null,
        health_lag_max_s: healthLags.length ? healthLags.at(-1)! : null,
      };
      results.push(row);
      console.log(`${engine.padEnd(9)} ${shape.readings} reading(s) per request, ${shape.instances} instance(s), ${clients} clients: ${row.requests_per_s} req/s ` +
        `(p50 ${row.p50_ms} ms, p99 ${row.p99_ms} ms) = ${row.stations_at_one_a_minute.toLocaleString('en')} stations at one reading a minute; ` +
        `raw one-row INSERT ${row.raw_insert_tx_per_s} tx/s (requests at ${row.requests_vs_raw} of it); ` +
        `replica: 201 to visible p50 ${row.replica_delay_p50_ms} ms, p99 ${row.replica_delay_p99_ms} ms, max ${row.replica_delay_max_ms} ms; /health/ lag max ${row.health_lag_max_s} s`);
    }
    return results;
  } finally {
    await replica?.end();
    await Promise.all(serves.map((s) => s.stop()));
    if (typeof standby !== 'string') await standby.close();
  }
});
