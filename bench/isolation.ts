// bench/isolation: what heavy clients cost everyone else, beside the same measurement without them in the
// same run. (a) Ingest latency (one-reading batches, one after another) while four clients hold downloads
// open and read nothing; (b) /data/latest/ latency while 60 clients fetch 720-hour histories at once.
import pg from 'pg';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { createSlonikPool } from '../src/db/pool.js';
import { eachEngine, percentile, startServe } from './lib.js';

async function timed(times: number, fn: () => Promise<void>, pauseMs = 20): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await fn();
    out.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  return out.sort((a, b) => a - b);
}

const summary = (ms: number[]) => ({ p50: +percentile(ms, 50).toFixed(1), p99: +percentile(ms, 99).toFixed(1), max: +ms.at(-1)!.toFixed(1) });

await eachEngine('isolation', async (engine, databaseUrl) => {
  const pool = await createSlonikPool(databaseUrl, { poolSize: 1, statementTimeoutMs: 600_000 });
  for (const id of ['iso-big', 'iso-in']) {
    await upsertStation(pool, { station_id: id, name: id, location_name: 'Bench', altitude_m: 1, latitude: 45, longitude: 6, status: 'active' });
  }
  const { key } = await issueKey(pool, 'iso-in');
  await pool.end();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`insert into readings (station_id, ts, temperature_c, humidity_rh, pm10, quality_flag)
    select 'iso-big', date_trunc('minute', now()) - i * interval '1 minute', i % 30, i % 90, i % 50, 'ok' from generate_series(1, 400000) as i`);
  await client.query(`insert into station_latest select 'iso-big', max(ts) from readings where station_id = 'iso-big'`);
  await client.query('analyze');
  await client.end();
  const serve = await startServe(databaseUrl, { DOWNLOADS_PER_CLIENT: '4' });
  try {
    let n = 0;
    const ingest = async () => {
      const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
        body: JSON.stringify({ station_id: 'iso-in', readings: [{ timestamp: new Date(Date.now() - 600_000 + n++).toISOString(), temperature_c: 1 }] }),
      });
      await response.json();
      if (response.status !== 201) throw new Error(`ingest ${response.status}`);
    };
    const latest = async () => {
      const response = await fetch(`${serve.url}/api/v1/data/latest/?station=iso-big`);
      await response.json();
      if (response.status !== 200) throw new Error(`latest ${response.status}`);
    };
    await timed(20, ingest);
    await timed(20, latest);
    const ingestAlone = await timed(40, ingest);
    const stalled = await Promise.all([0, 1, 2, 3].map(async () => {
      const controller = new AbortController();
      const response = await fetch(`${serve.url}/api/v1/data/download/?station=iso-big`, { signal: controller.signal });
      if (response.status !== 200) throw new Error(`download ${response.status}`);
      return controller;
    }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ingestStalled = await timed(40, ingest);
    for (const c of stalled) c.abort();

    const latestAlone = await timed(40, latest, 50);
    let stop = false;
    const probes: number[] = [];
    const probing = (async () => {
      while (!stop) probes.push(...(await timed(1, latest, 50)));
    })();
    const stormStarted = performance.now();
    const statuses: number[] = [];
    await Promise.all(Array.from({ length: 60 }, async () => {
      const response = await fetch(`${serve.url}/api/v1/data/historical/?station=iso-big&hours=720`);
      const body = (await response.json()) as { count?: number };
      statuses.push(response.status);
      if (response.status === 200 && !(body.count! >= 43_000)) throw new Error('short history');
    }));
    const stormSeconds = (performance.now() - stormStarted) / 1000;
    stop = true;
    await probing;
    probes.sort((a, b) => a - b);
    const row = {
      engine,
      ingest_alone_ms: summary(ingestAlone), ingest_beside_4_stalled_downloads_ms: summary(ingestStalled),
      latest_alone_ms: summary(latestAlone), latest_during_60_histories_ms: summary(probes),
      histories_served: statuses.filter((s) => s === 200).length, histories_seconds: +stormSeconds.toFixed(1),
    };
    console.log(`${engine.padEnd(9)} ingest p50/p99/max ${Object.values(row.ingest_alone_ms).join('/')} ms alone, ${Object.values(row.ingest_beside_4_stalled_downloads_ms).join('/')} ms beside 4 stalled downloads`);
    console.log(`${engine.padEnd(9)} latest p50/p99/max ${Object.values(row.latest_alone_ms).join('/')} ms alone, ${Object.values(row.latest_during_60_histories_ms).join('/')} ms during 60 concurrent 720-hour histories (${row.histories_served} served in ${row.histories_seconds} s)`);
    return [row];
  } finally {
    await serve.stop();
  }
});
