// bench/compression: a station-year CSV download sent as is, gzip and brotli, each beside psql's
// `\copy` of the same query in the same run: throughput, bytes on the wire and the serving process's
// memory while it streams; and the size of typical answers before and after compression. The client
// does what a real one does: reads every byte and decodes it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createBrotliDecompress, createGunzip } from 'node:zlib';
import pg from 'pg';
import { importContent, parseContentFile } from '../src/content/importContent.js';
import { createSlonikPool } from '../src/db/pool.js';
import { copyStatement } from '../src/db/copyOut.js';
import { downloadQuery } from '../src/readings/export/download.js';
import { loadStationYears, yearMinutes } from './dataset.js';
import { eachEngine, fmt, startServe } from './lib.js';

const runs = Number(process.env.BENCH_COMPRESSION_RUNS ?? 3);

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

type Fetched = { wireBytes: number; bytes: number; seconds: number; encoding: string };

/** GETs `url` with Accept-Encoding `accept`, reading and decoding every byte. */
function fetchAll(url: string, accept: string): Promise<Fetched> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    http.get(url, { headers: { 'Accept-Encoding': accept } }, (response) => {
      const encoding = response.headers['content-encoding'] ?? 'identity';
      let wireBytes = 0;
      let bytes = 0;
      response.on('data', (chunk: Buffer) => (wireBytes += chunk.length));
      const decoded = encoding === 'br' ? response.pipe(createBrotliDecompress()) : encoding === 'gzip' ? response.pipe(createGunzip()) : response;
      if (decoded !== response) decoded.on('data', (chunk: Buffer) => (bytes += chunk.length));
      decoded.on('end', () => resolve({ wireBytes, bytes: decoded === response ? wireBytes : bytes, seconds: (performance.now() - started) / 1000, encoding }));
      decoded.on('error', reject);
    }).on('error', reject);
  });
}

await eachEngine('compression', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  // A station reporting now, for the last 720 hours' history, and the demo content for the notes.
  const pool = await createSlonikPool(databaseUrl, { poolSize: 1, statementTimeoutMs: 600_000 });
  await importContent(pool, parseContentFile(JSON.parse(readFileSync(path.resolve('src/content/demoContent.json'), 'utf8'))));
  await pool.end();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  await client.query(`insert into stations (station_id, name) values ('now-1', 'Reporting now')`);
  await client.query(`insert into readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, quality_flag)
    select 'now-1', date_trunc('minute', now()) - i * interval '1 minute', round((10 + 5 * sin(i / 200.0))::numeric, 2),
      round((60 + 10 * cos(i / 300.0))::numeric, 1), round((1005 + sin(i / 5000.0))::numeric, 1), round((8 + (i % 17))::numeric, 1), 'ok'
    from generate_series(0, 43199) as i`);
  await client.query(`insert into station_latest select 'now-1', date_trunc('minute', now()) on conflict (station_id) do update set ts = excluded.ts`);
  await client.query('analyze');
  const copy = copyStatement(client, downloadQuery({ stationIds: [station!], withStation: false }), 'csv');
  await client.end();

  const serve = await startServe(databaseUrl);
  try {
    const download = `${serve.url}/api/v1/data/download/?station=${station}`;
    const best = new Map<string, Fetched & { peakKb: number }>();
    let psqlSeconds = Infinity;
    for (let run = 0; run < runs; run++) {
      for (const accept of ['identity', 'gzip', 'br']) {
        const before = rssKb(serve.child.pid!);
        let peak = before;
        const sampler = setInterval(() => (peak = Math.max(peak, rssKb(serve.child.pid!))), 20);
        const fetched = await fetchAll(download, accept);
        clearInterval(sampler);
        if (fetched.encoding !== accept) throw new Error(`asked for ${accept}, got ${fetched.encoding}`);
        const previous = best.get(accept);
        if (!previous || fetched.seconds < previous.seconds) best.set(accept, { ...fetched, peakKb: peak - before });
      }
      const started = performance.now();
      execFileSync('psql', [databaseUrl, '-X', '-q', '-c', copy.replace(/^copy /, '\\copy ')], { maxBuffer: 1 << 30 });
      psqlSeconds = Math.min(psqlSeconds, (performance.now() - started) / 1000);
    }
    const identity = best.get('identity')!;
    const psqlRate = yearMinutes / psqlSeconds;
    console.log(`${engine}: a station-year download (${fmt(yearMinutes)} rows, ${(identity.bytes / 1e6).toFixed(1)} MB as CSV); psql \\copy ${fmt(psqlRate)} rows/s (${psqlSeconds.toFixed(2)} s)`);
    for (const [accept, fetched] of best) {
      const rate = yearMinutes / fetched.seconds;
      const row = {
        engine, path: 'download station-year', encoding: accept, wire_mb: +(fetched.wireBytes / 1e6).toFixed(2), size_ratio: +(fetched.wireBytes / identity.wireBytes).toFixed(3),
        rows_per_s: Math.round(rate), seconds: +fetched.seconds.toFixed(2), vs_identity: +(identity.seconds / fetched.seconds).toFixed(2), vs_psql: +(rate / psqlRate).toFixed(2),
        server_rss_growth_mb: +(fetched.peakKb / 1024).toFixed(1),
      };
      results.push(row);
      console.log(`  ${accept.padEnd(8)} ${row.wire_mb.toFixed(1).padStart(6)} MB on the wire (${row.size_ratio.toFixed(3)} of identity)   ${fmt(row.rows_per_s).padStart(9)} rows/s   ${row.vs_identity.toFixed(2)}x identity's speed   ${row.vs_psql.toFixed(2)} of psql   server RSS +${row.server_rss_growth_mb} MB`);
    }

    const answers: [string, string][] = [
      ['docs bundle (swagger-ui-bundle.js)', '/api/v1/docs/assets/swagger-ui-bundle.js'],
      ['OpenAPI document', '/api/v1/openapi.json'],
      ['stations (JSON)', '/api/v1/stations/'],
      ['station-month CSV', `/api/v1/data/download/?station=${station}&from_date=2025-03-01&to_date=2025-03-31`],
      ['720-hour history', '/api/v1/data/historical/?station=now-1&hours=720'],
      ['hourly aggregate of a year (JSON)', `/api/v1/data/aggregate/?station=${station}&period=hour`],
      ['notes (JSON)', '/api/v1/notes/'],
    ];
    console.log(`  answer sizes, identity -> gzip / br:`);
    for (const [name, target] of answers) {
      // One after the other: downloads are limited per client.
      const sizes: Record<string, number> = {};
      for (const accept of ['identity', 'gzip', 'br']) {
        const fetched = await fetchAll(`${serve.url}${target}`, accept);
        if (fetched.encoding !== accept) throw new Error(`${target}: asked for ${accept}, got ${fetched.encoding}`);
        sizes[accept] = fetched.wireBytes;
      }
      results.push({ engine, answer: name, identity_bytes: sizes.identity, gzip_bytes: sizes.gzip, br_bytes: sizes.br });
      const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
      console.log(`    ${name.padEnd(36)} ${kb(sizes.identity!).padStart(11)} -> ${kb(sizes.gzip!).padStart(10)} (${(sizes.gzip! / sizes.identity!).toFixed(3)}) / ${kb(sizes.br!).padStart(10)} (${(sizes.br! / sizes.identity!).toFixed(3)})`);
    }
  } finally {
    await serve.stop();
  }
  return results;
});
