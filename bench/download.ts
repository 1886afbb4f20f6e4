// bench/download: rows/s and MB/s of /data/download/ for one station-year, beside psql's
// `\copy (the same query) to stdout` in the same run; and the serving process's peak memory.
// Target: at least 0.8 of psql's rate.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { copyStatement } from '../src/db/copyOut.js';
import { downloadQuery } from '../src/readings/export/download.js';
import { loadStationYears, yearMinutes } from './dataset.js';
import { eachEngine, fmt, startServe } from './lib.js';

const runs = Number(process.env.BENCH_DOWNLOAD_RUNS ?? 3);

function memoryKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match?.[1] ?? NaN);
}

await eachEngine('download', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const serve = await startServe(databaseUrl);
  try {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    const copy = copyStatement(client, downloadQuery({ stationIds: [station!], withStation: false }), 'csv');
    await client.end();
    const select = copy.replace(/^copy /, '\\copy ');
    const rssBefore = memoryKb(serve.child.pid!, 'VmRSS');
    let best = { http: 0, psql: 0, bytes: 0 };
    for (let run = 0; run < runs; run++) {
      let started = performance.now();
      const response = await fetch(`${serve.url}/api/v1/data/download/?station=${station}`);
      let bytes = 0;
      for await (const chunk of response.body!) bytes += chunk.length;
      const httpSeconds = (performance.now() - started) / 1000;
      started = performance.now();
      const out = execFileSync('psql', [databaseUrl, '-X', '-q', '-c', select], { maxBuffer: 1 << 30 });
      const psqlSeconds = (performance.now() - started) / 1000;
      if (out.length < bytes * 0.9) throw new Error('psql returned less than the API');
      best = { http: Math.max(best.http, yearMinutes / httpSeconds), psql: Math.max(best.psql, yearMinutes / psqlSeconds), bytes };
    }
    const peak = memoryKb(serve.child.pid!, 'VmHWM');
    const row = {
      engine, rows: yearMinutes, mb: +(best.bytes / 1e6).toFixed(1),
      http_rows_per_s: Math.round(best.http), http_mb_per_s: +((best.http / yearMinutes) * best.bytes / 1e6).toFixed(1),
      psql_rows_per_s: Math.round(best.psql), ratio: +(best.http / best.psql).toFixed(2),
      rss_before_mb: +(rssBefore / 1024).toFixed(0), peak_rss_mb: +(peak / 1024).toFixed(0),
    };
    results.push(row);
    console.log(`${engine.padEnd(9)} ${fmt(row.rows)} rows, ${row.mb} MB   API ${fmt(row.http_rows_per_s).padStart(9)} rows/s ${row.http_mb_per_s} MB/s   psql \\copy ${fmt(row.psql_rows_per_s).padStart(9)} rows/s   ratio ${row.ratio}   server RSS ${row.rss_before_mb} MB before, peak ${row.peak_rss_mb} MB`);
  } finally {
    await serve.stop();
  }
  return results;
});
