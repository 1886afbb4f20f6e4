// bench/live: minute-by-minute ingest as field stations do it: 16 stations, each posting one current
// reading per request, back to back, for BENCH_LIVE_SECONDS; requests per second beside the limit, the
// same single-row INSERTs into `readings` from 16 connections in the same run.
import pg from 'pg';
import { benchRows, eachEngine, fmt, percentile, startServe, stationsWithKeys } from './lib.js';

const stations = 16;
const seconds = Number(process.env.BENCH_LIVE_SECONDS ?? 10);

await eachEngine('live', async (engine, databaseUrl) => {
  const keys = await stationsWithKeys(databaseUrl, Array.from({ length: stations }, (_, s) => `live-${s}`));
  const serve = await startServe(databaseUrl);
  try {
    // Each request carries its station's next reading, 10 ms apart, within the last half hour: above every
    // watermark, as live readings are.
    const start = Date.now() - 1_800_000;
    const at = (index: number) => start + index * 10;
    const latencies: number[] = [];
    const run = async (ms: number, send: (s: number, i: number) => Promise<void>) => {
      const until = performance.now() + ms;
      let count = 0;
      await Promise.all(Array.from({ length: stations }, async (_, s) => {
        for (let i = 0; performance.now() < until; i++) {
          await send(s, i);
          count++;
        }
      }));
      return count / (ms / 1000);
    };
    let offset = 0;
    const post = async (s: number, i: number) => {
      const [reading] = benchRows(1, at(offset + i));
      const started = performance.now();
      const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${keys[s]}` },
        body: JSON.stringify({ station_id: `live-${s}`, readings: [reading] }),
      });
      const body = (await response.json()) as { accepted: number };
      if (response.status !== 201 || body.accepted !== 1) throw new Error(`ingest: ${response.status} ${JSON.stringify(body)}`);
      latencies.push(performance.now() - started);
    };
    await run(1000, post); // warm
    offset = 20_000;
    latencies.length = 0;
    const httpRate = await run(seconds * 1000, post);
    latencies.sort((a, b) => a - b);
    // The limit: the same rows as single-row INSERTs, one connection per station.
    const clients = await Promise.all(Array.from({ length: stations }, async () => {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      return c;
    }));
    let rawOffset = 60_000;
    const insert = async (s: number, i: number) => {
      const [r] = benchRows(1, at(rawOffset + i));
      await clients[s]!.query(
        `insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'ok', $13, $14)`,
        [`live-${s}`, r!.timestamp, r!.temperature_c, r!.humidity_rh, r!.pressure_hpa, r!.altitude_m, r!.pm1_0, r!.pm2_5, r!.pm10, r!.co2_ppm, r!.co_ppm, r!.uv_index, r!.firmware_version, r!.module_data],
      );
    };
    await run(1000, insert);
    rawOffset = 80_000;
    const rawRate = await run(seconds * 1000, insert);
    await Promise.all(clients.map((c) => c.end()));
    const row = {
      engine, stations, http_req_per_s: Math.round(httpRate), p50_ms: +percentile(latencies, 50).toFixed(1), p99_ms: +percentile(latencies, 99).toFixed(1),
      raw_insert_per_s: Math.round(rawRate), ratio: +(httpRate / rawRate).toFixed(2),
    };
    console.log(`${engine.padEnd(9)} live ingest ${fmt(httpRate)} req/s (p50 ${row.p50_ms} ms, p99 ${row.p99_ms} ms); raw single-row INSERT ${fmt(rawRate)}/s; ratio ${row.ratio}`);
    return [row];
  } finally {
    await serve.stop();
  }
});
