// bench/parquet: a station-year of one-minute readings as Parquet beside the same download as CSV, in
// the same run: size, time (the client reads every byte) and the serving process's peak memory (each
// format measured on a fresh process, so that its peak is its own); psql's \copy of the CSV as the
// limit; and the year's hourly aggregate in both formats.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { copyStatement } from '../src/db/copyOut.js';
import { downloadQuery } from '../src/readings/export/download.js';
import { readParquet } from '../test/helpers/parquet.js';
import { loadStationYears, yearMinutes } from './dataset.js';
import { eachEngine, startServe } from './lib.js';

const runs = Number(process.env.BENCH_PARQUET_RUNS ?? 3);

const peakRssMb = (pid: number) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;

/**
 * Seconds to fetch `path` reading every byte (the first time, and the best of `runs`), the bytes of the
 * last, and the server's peak RSS.
 */
async function fetchAll(databaseUrl: string, path: string): Promise<{ first: number; seconds: number; bytes: Buffer; peakMb: number }> {
  const serve = await startServe(databaseUrl);
  try {
    let seconds = Infinity;
    let first = 0;
    let bytes = Buffer.alloc(0);
    for (let run = 0; run < runs; run++) {
      const started = performance.now();
      const response = await fetch(`${serve.url}${path}`);
      if (response.status !== 200) throw new Error(`${path}: ${response.status}`);
      const chunks: Buffer[] = [];
      for await (const chunk of response.body!) chunks.push(Buffer.from(chunk));
      const took = (performance.now() - started) / 1000;
      if (run === 0) first = took;
      seconds = Math.min(seconds, took);
      bytes = Buffer.concat(chunks);
    }
    return { first, seconds, bytes, peakMb: peakRssMb(serve.child.pid!) };
  } finally {
    await serve.stop();
  }
}

await eachEngine('parquet', async (engine, databaseUrl) => {
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const copy = copyStatement(client, downloadQuery({ stationIds: [station!], withStation: false }), 'csv');
  await client.end();
  let psql = Infinity;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    execFileSync('psql', [databaseUrl, '-X', '-q', '-c', copy.replace(/^copy /, '\\copy ')], { maxBuffer: 1 << 30 });
    psql = Math.min(psql, (performance.now() - started) / 1000);
  }
  const results: Record<string, unknown>[] = [];
  for (const [what, path] of [['download', `/api/v1/data/download/?station=${station}`], ['hourly aggregate', `/api/v1/data/aggregate/?station=${station}&period=hour`]] as const) {
    const csv = await fetchAll(databaseUrl, `${path}&output=csv`);
    const parquet = await fetchAll(databaseUrl, `${path}&output=parquet`);
    const rows = (await readParquet(parquet.bytes)).rows.length;
    if (what === 'download' && rows !== yearMinutes) throw new Error(`the Parquet file holds ${rows} rows`);
    const row = {
      engine, what, rows,
      csv_mb: +(csv.bytes.length / 1e6).toFixed(2), parquet_mb: +(parquet.bytes.length / 1e6).toFixed(2),
      size_ratio: +(parquet.bytes.length / csv.bytes.length).toFixed(3),
      csv_s: +csv.seconds.toFixed(3), parquet_s: +parquet.seconds.toFixed(3), time_ratio: +(parquet.seconds / csv.seconds).toFixed(2),
      csv_first_s: +csv.first.toFixed(3), parquet_first_s: +parquet.first.toFixed(3),
      ...(what === 'download' ? { psql_csv_s: +psql.toFixed(3), parquet_vs_psql: +(psql / parquet.seconds).toFixed(2) } : {}),
      csv_peak_rss_mb: Math.round(csv.peakMb), parquet_peak_rss_mb: Math.round(parquet.peakMb),
    };
    results.push(row);
    console.log(`${engine.padEnd(9)} ${what.padEnd(16)} ${String(rows).padStart(7)} rows   CSV ${row.csv_mb} MB in ${row.csv_s} s, peak RSS ${row.csv_peak_rss_mb} MB   ` +
      `Parquet ${row.parquet_mb} MB (${row.size_ratio} of CSV) in ${row.parquet_s} s (${row.time_ratio}x CSV), peak RSS ${row.parquet_peak_rss_mb} MB` +
      (what === 'download' ? '' : `   first asked: CSV ${row.csv_first_s} s, Parquet ${row.parquet_first_s} s (later ones from the aggregate cache)`) +
      (what === 'download' ? `   psql \\copy CSV ${row.psql_csv_s} s (Parquet at ${row.parquet_vs_psql} of its rate)` : ''));
  }
  return results;
});
