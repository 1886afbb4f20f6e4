// bench/snapshots: what a snapshot of a station-year costs, each figure beside a limit measured in the same
// run, through the real `envmon serve`:
//  1. making it (POST /snapshots/: the CSV and the Parquet file made once, to be digested), and asking for
//     it again (the CSV made to name it, the snapshot found), against a live CSV download plus a Parquet
//     download of the same readings;
//  2. a Parquet reader opening the snapshot's file by URL through HTTP ranges (hyparquet: a HEAD, the
//     footer, then three columns), with the file cache on (SNAPSHOT_CACHE_MB=256) and off (0), against
//     the same reader on the live Parquet download saved to memory: the cache is the fast path, and
//     these figures are what keeps it.
import { asyncBufferFromUrl, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { loadStationYears } from './dataset.js';
import { eachEngine, fmt, medianMs, startServe } from './lib.js';

const runs = Number(process.env.BENCH_SNAPSHOT_RUNS ?? 3);

/** Reads three columns of a Parquet file by URL through ranges, as a reader opening it remotely does. */
async function readByUrl(url: string): Promise<number> {
  let requests = 0;
  const counting: typeof fetch = (input, init) => {
    requests++;
    return fetch(input, init);
  };
  const file = await asyncBufferFromUrl({ url, fetch: counting });
  await parquetMetadataAsync(file);
  await parquetReadObjects({ file, columns: ['timestamp_utc', 'temperature_c', 'quality_flag'] });
  return requests;
}

await eachEngine('snapshots', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const cached = await startServe(databaseUrl, { SNAPSHOT_CACHE_MB: '256' });
  const uncached = await startServe(databaseUrl, { SNAPSHOT_CACHE_MB: '0' });
  try {
    const download = `/api/v1/data/download/?station=${station}`;
    const make = async () => {
      const response = await fetch(`${cached.url}/api/v1/snapshots/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url: download }) });
      if (response.status !== 201) throw new Error(`snapshot: ${response.status} ${await response.text()}`);
      return await response.json() as { id: string; formats: { parquet: { bytes: number } } };
    };
    const started = performance.now();
    const record = await make();
    const firstMs = performance.now() - started;
    const againMs = await medianMs(runs, async () => {
      await make();
    });
    const downloadsMs = await medianMs(runs, async () => {
      await (await fetch(`${cached.url}${download}`)).arrayBuffer();
      await (await fetch(`${cached.url}${download}&output=parquet`)).arrayBuffer();
    });
    const path = `/api/v1/snapshots/${record.id}/data.parquet`;
    let requests = 0;
    // The first read by each server fills its cache (or not); the runs after it are what a reader meets.
    await readByUrl(`${cached.url}${path}`);
    const cachedMs = await medianMs(runs, async () => {
      requests = await readByUrl(`${cached.url}${path}`);
    });
    const uncachedMs = await medianMs(runs, async () => {
      await readByUrl(`${uncached.url}${path}`);
    });
    const liveMs = await medianMs(runs, async () => {
      await (await fetch(`${cached.url}${download}&output=parquet`)).arrayBuffer();
    });
    const rows = [
      { engine, what: 'make a snapshot (CSV and Parquet digested)', ms: firstMs, limit: 'live CSV + Parquet downloads', limit_ms: downloadsMs },
      { engine, what: 'ask for it again (CSV made, snapshot found)', ms: againMs, limit: 'live CSV + Parquet downloads', limit_ms: downloadsMs },
      { engine, what: `read 3 columns by URL, cache on (${requests} requests)`, ms: cachedMs, limit: 'live Parquet download', limit_ms: liveMs },
      { engine, what: 'read 3 columns by URL, cache off', ms: uncachedMs, limit: 'live Parquet download', limit_ms: liveMs },
    ];
    for (const row of rows) {
      results.push({ ...row, ratio: +(row.ms / row.limit_ms).toFixed(2), parquet_bytes: record.formats.parquet.bytes });
      console.log(`${engine.padEnd(9)} ${row.what.padEnd(48)} ${fmt(row.ms).padStart(7)} ms   ${row.limit} ${fmt(row.limit_ms)} ms   ratio ${(row.ms / row.limit_ms).toFixed(2)}`);
    }
  } finally {
    await cached.stop();
    await uncached.stop();
  }
  return results;
});
