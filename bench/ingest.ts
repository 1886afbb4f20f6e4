// bench/ingest: readings per second through HTTP (batches of 100, 1,000 and 10,000; 1 and 4 concurrent
// clients, each its own station) beside the limit, a raw COPY of the same rows into the same `readings`
// table in the same run, for each engine. Target: 10,000-reading batches at >= 0.5 of raw COPY's rate.
import { issueKey } from '../src/stations/keys.js';
import { createSlonikPool } from '../src/db/pool.js';
import { upsertStation } from '../src/stations/queries.js';
import { benchRows, chunk, copyReadings, fmt, openServer, saveResults, startServe } from './lib.js';

const totalPerRun = Number(process.env.BENCH_INGEST_ROWS ?? 60_000);
const batchSizes = [100, 1_000, 10_000];
const clientCounts = [1, 4];

async function main() {
  const server = await openServer();
  const results: Record<string, unknown>[] = [];
  try {
    for (const engine of server.engines) {
      const databaseUrl = await server.createDatabase(engine);
      const pool = await createSlonikPool(databaseUrl, { poolSize: 2, statementTimeoutMs: 600_000 });
      const keys: string[] = [];
      for (let c = 0; c < Math.max(...clientCounts); c++) {
        await upsertStation(pool, { station_id: `bench-${c}`, name: `Bench ${c}`, location_name: 'Bench', altitude_m: 210, latitude: 45, longitude: 6, status: 'active' });
        keys.push((await issueKey(pool, `bench-${c}`)).key);
      }
      await pool.end();
      const serve = await startServe(databaseUrl);
      let cursor = Date.parse('2020-01-01T00:00:00Z');
      try {
        for (const clients of clientCounts) {
          for (const batchSize of batchSizes) {
            const perClient = Math.floor(totalPerRun / clients / batchSize) * batchSize;
            const bodies = Array.from({ length: clients }, (_, c) => {
              const rows = benchRows(perClient, cursor);
              // Bytes, as a station holds them (see bench/paths).
              return chunk(rows, batchSize).map((readings) => Buffer.from(JSON.stringify({ station_id: `bench-${c}`, readings })));
            });
            cursor += perClient * 60_000;
            const copyRate = await copyReadings(databaseUrl, 'bench-copy', benchRows(perClient * clients, cursor));
            const started = performance.now();
            await Promise.all(bodies.map(async (batches, c) => {
              for (const body of batches) {
                const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
                  method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${keys[c]}` }, body,
                });
                const result = (await response.json()) as { accepted: number };
                if (response.status !== 201 || result.accepted !== batchSize) throw new Error(`ingest failed: ${response.status} ${JSON.stringify(result)}`);
              }
            }));
            const seconds = (performance.now() - started) / 1000;
            const httpRate = (perClient * clients) / seconds;
            const row = { engine, batch: batchSize, clients, readings: perClient * clients, http_rows_per_s: Math.round(httpRate), copy_rows_per_s: Math.round(copyRate), ratio: Math.round((httpRate / copyRate) * 100) / 100 };
            results.push(row);
            console.log(`${engine.padEnd(9)} batch ${fmt(batchSize).padStart(6)} x${clients}  http ${fmt(httpRate).padStart(8)} rows/s   raw COPY ${fmt(copyRate).padStart(8)} rows/s   ratio ${row.ratio.toFixed(2)}`);
          }
        }
      } finally {
        await serve.stop();
        await server.dropDatabase(databaseUrl);
      }
    }
  } finally {
    await server.close();
  }
  saveResults('ingest', results);
}

await main();
