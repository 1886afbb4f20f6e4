// bench/snapshots: what a snapshot of a station-year costs now that its files are stored in the database
// (snapshot_chunks, 1 MiB each) when it is made and served from there, through the real `envmon serve`,
// each figure beside a limit measured in the same round (medians of BENCH_SNAPSHOT_RUNS rounds, after one
// unmeasured), every byte read by fetch with its default Accept-Encoding:
//  1. making one (POST /snapshots/ of the station's download: its CSV and Parquet made, digested and
//     stored), against a live CSV download plus a live Parquet download of the same query; before each
//     making, unmeasured, the station posts one new reading, so that each is a new snapshot, not found;
//  2. a full GET of the snapshot's CSV and of its Parquet file, each against the same live download;
//  3. HEAD, a 304 (If-None-Match with its ETag), `Range: bytes=-1` and a 64 KiB range across the first
//     chunk's end, each against a cheap request: the discovery document (`/api/v1/`, no database) and the
//     station's `/data/latest/` (one query); BENCH_SNAPSHOT_REQUESTS requests of each in turn per round;
//  4. asking for an existing snapshot with its own explicit `as_of` (found by a lookup, its answer not
//     made again), against the same cheap requests;
//  5. a Parquet reader opening the snapshot's file by URL through ranges (hyparquet: a HEAD, the footer,
//     three columns), against the live Parquet download;
//  6. the service's memory: its RSS (/proc, sampled every 10 ms) at rest and at its peak while a snapshot
//     is made, against the same while the live CSV and Parquet downloads run, each in a service just
//     started (so that no earlier request's garbage counts), the two taking turns.
import { readFile } from 'node:fs/promises';
import { asyncBufferFromUrl, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { loadStationYears, yearMinutes, yearStart } from './dataset.js';
import { eachEngine, fmt, percentile, startServe, stationsWithKeys, type Serve } from './lib.js';

const runs = Number(process.env.BENCH_SNAPSHOT_RUNS ?? 5);
const requests = Number(process.env.BENCH_SNAPSHOT_REQUESTS ?? 20);
const mib = 1024 * 1024;

type SnapshotRecord = { id: string; as_of: string; formats: { csv: { url: string; bytes: number }; parquet: { url: string; bytes: number } } };

/** GETs (or HEADs) `url` as a real client does, reading every byte; ms. */
async function fetchAll(url: string, init: RequestInit = {}, status = 200): Promise<number> {
  const started = performance.now();
  const response = await fetch(url, init);
  const body = await response.arrayBuffer();
  if (response.status !== status) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${Buffer.from(body).toString()}`);
  return performance.now() - started;
}

/** The service's resident memory (VmRSS), in bytes. */
async function rssOf(serve: Serve): Promise<number> {
  const status = await readFile(`/proc/${serve.child.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Runs `fn` while sampling the service's RSS every 10 ms; its ms and the highest RSS seen. */
async function withPeakRss(serve: Serve, fn: () => Promise<unknown>): Promise<{ ms: number; peak: number }> {
  let peak = await rssOf(serve);
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await rssOf(serve));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  const started = performance.now();
  try {
    await fn();
  } finally {
    sampling = false;
    await sampler;
  }
  return { ms: performance.now() - started, peak };
}

/** Reads three columns of a Parquet file by URL through ranges, as a reader opening it remotely does; the requests made. */
async function readByUrl(url: string): Promise<number> {
  let made = 0;
  const counting: typeof fetch = (input, init) => {
    made++;
    return fetch(input, init);
  };
  const file = await asyncBufferFromUrl({ url, fetch: counting });
  await parquetMetadataAsync(file);
  await parquetReadObjects({ file, columns: ['timestamp_utc', 'temperature_c', 'quality_flag'] });
  return made;
}

const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);

/** Rounds of the timed functions (one unmeasured first), in an order turned by one each round; ms per key and round. */
async function rounds<K extends string>(timed: Record<K, () => Promise<number>>): Promise<Record<K, number[]>> {
  const keys = Object.keys(timed) as K[];
  const times = Object.fromEntries(keys.map((k) => [k, [] as number[]])) as Record<K, number[]>;
  for (let round = -1; round < runs; round++) {
    for (let i = 0; i < keys.length; i++) {
      const key = keys[(i + Math.max(round, 0)) % keys.length]!;
      const took = await timed[key]();
      if (round >= 0) times[key].push(took);
    }
  }
  return times;
}

/** `requests` requests one after another; the mean ms of one. */
const repeated = (fn: () => Promise<number>) => async () => {
  let total = 0;
  for (let i = 0; i < requests; i++) total += await fn();
  return total / requests;
};

await eachEngine('snapshots', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [station] = await loadStationYears(databaseUrl, engine, 1);
  const [key] = await stationsWithKeys(databaseUrl, [station!]);
  // No daily quota: the bench makes a dozen station-year snapshots.
  const serve = await startServe(databaseUrl, { SNAPSHOT_QUOTA_MB: '0' });
  try {
    const download = `/api/v1/data/download/?station=${station}`;
    const post = async (url: string, on = serve) => {
      const response = await fetch(`${on.url}/api/v1/snapshots/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
      if (response.status !== 201) throw new Error(`snapshot: ${response.status} ${await response.text()}`);
      return await response.json() as SnapshotRecord;
    };
    let posted = 0;
    // One new reading after the station's newest: the download's answer changes, so the next snapshot is new.
    const postReading = async () => {
      const timestamp = new Date(yearStart + (yearMinutes + posted++) * 60_000).toISOString();
      const response = await fetch(`${serve.url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
        body: JSON.stringify({ station_id: station, readings: [{ timestamp, temperature_c: 11.5 }] }),
      });
      if (response.status !== 201) throw new Error(`ingest: ${response.status} ${await response.text()}`);
    };
    const live = { csv: () => fetchAll(`${serve.url}${download}`), parquet: () => fetchAll(`${serve.url}${download}&output=parquet`) };

    // 1. Making.
    let record: SnapshotRecord | undefined;
    const ids = new Set<string>();
    const makeOne = async (on: Serve) => {
      await postReading();
      record = await post(download, on);
      if (ids.has(record.id)) throw new Error(`snapshot ${record.id} found again, not made`);
      ids.add(record.id);
    };
    const make = await rounds({
      downloads: async () => {
        const started = performance.now();
        await live.csv();
        await live.parquet();
        return performance.now() - started;
      },
      make: async () => {
        const started = performance.now();
        await makeOne(serve);
        return performance.now() - started;
      },
    });
    const snapshot = record!;
    const files = { csv: `${serve.url}${new URL(snapshot.formats.csv.url).pathname}`, parquet: `${serve.url}${new URL(snapshot.formats.parquet.url).pathname}` };

    // 2. Full GETs, each against the live download.
    const full = await rounds({ live_csv: live.csv, stored_csv: () => fetchAll(files.csv), live_parquet: live.parquet, stored_parquet: () => fetchAll(files.parquet) });

    // 3 and 4. The cheap requests, and asking for the snapshot with its own as_of.
    const etag = (await fetch(files.csv, { method: 'HEAD' })).headers.get('etag')!;
    const asOfUrl = `${download}&as_of=${encodeURIComponent(snapshot.as_of)}`;
    const found = await post(asOfUrl);
    if (found.id !== snapshot.id) throw new Error(`as_of ${snapshot.as_of}: snapshot ${found.id}, not ${snapshot.id}`);
    // 64 KiB across the end of the first 1 MiB chunk.
    const across = `bytes=${mib - 32 * 1024}-${mib + 32 * 1024 - 1}`;
    const small = await rounds({
      discovery: repeated(() => fetchAll(`${serve.url}/api/v1/`)),
      latest: repeated(() => fetchAll(`${serve.url}/api/v1/data/latest/?station=${station}`)),
      head: repeated(() => fetchAll(files.csv, { method: 'HEAD' })),
      not_modified: repeated(() => fetchAll(files.csv, { headers: { 'If-None-Match': etag } }, 304)),
      last_byte: repeated(() => fetchAll(files.parquet, { headers: { Range: 'bytes=-1' } }, 206)),
      range_64k: repeated(() => fetchAll(files.csv, { headers: { Range: across } }, 206)),
      lookup: repeated(async () => {
        const started = performance.now();
        const again = await post(asOfUrl);
        if (again.id !== snapshot.id) throw new Error(`as_of lookup gave ${again.id}`);
        return performance.now() - started;
      }),
    });

    // 5. A reader by URL.
    let made = 0;
    const reader = await rounds({ live_parquet: live.parquet, by_url: async () => {
      const started = performance.now();
      made = await readByUrl(files.parquet);
      return performance.now() - started;
    } });

    const line = (what: string, values: number[], limit: string, limitValues: number[], extra: Record<string, unknown> = {}) => {
      const ratios = values.map((v, i) => v / limitValues[i]!);
      const row = { engine, what, ms: +median(values).toFixed(2), limit, limit_ms: +median(limitValues).toFixed(2), ratio: +median(ratios).toFixed(3), rounds_ratio: ratios.map((r) => +r.toFixed(3)), ...extra };
      results.push(row);
      console.log(`${engine.padEnd(9)} ${what.padEnd(52)} ${fmt(row.ms, row.ms < 100 ? 2 : 0).padStart(8)} ms   ${limit.padEnd(34)} ${fmt(row.limit_ms, row.limit_ms < 100 ? 2 : 0).padStart(8)} ms   ratio ${row.ratio < 0.1 ? row.ratio.toFixed(3) : row.ratio.toFixed(2)}`);
    };
    console.log(`${engine}: snapshot ${snapshot.id}: CSV ${fmt(snapshot.formats.csv.bytes / 1e6, 1)} MB, Parquet ${fmt(snapshot.formats.parquet.bytes / 1e6, 1)} MB; medians of ${runs} rounds`);
    line('make a snapshot (CSV + Parquet made, digested, stored)', make.make, 'live CSV + Parquet downloads', make.downloads);
    line('GET the stored CSV', full.stored_csv, 'live CSV download', full.live_csv);
    line('GET the stored Parquet', full.stored_parquet, 'live Parquet download', full.live_parquet);
    for (const [key, what] of [['head', 'HEAD of the CSV'], ['not_modified', 'GET of the CSV, If-None-Match (304)'], ['last_byte', 'Range: bytes=-1 of the Parquet (206)'],
      ['range_64k', `Range: ${across} of the CSV (206)`], ['lookup', 'POST with an existing snapshot\'s as_of (lookup)']] as const) {
      line(what, small[key], '/api/v1/ (discovery)', small.discovery);
      line(what, small[key], '/data/latest/', small.latest);
    }
    line(`read 3 columns of the Parquet by URL (${made} requests)`, reader.by_url, 'live Parquet download', reader.live_parquet);

    // 6. Memory, each measurement in a service just started.
    const memory = { make: { rest: [] as number[], peak: [] as number[] }, downloads: { rest: [] as number[], peak: [] as number[] } };
    const fresh = (kind: keyof typeof memory, fn: (on: Serve) => Promise<unknown>) => async () => {
      const on = await startServe(databaseUrl, { SNAPSHOT_QUOTA_MB: '0' });
      try {
        memory[kind].rest.push(await rssOf(on));
        const { ms, peak } = await withPeakRss(on, () => fn(on));
        memory[kind].peak.push(peak);
        return ms;
      } finally {
        await on.stop();
      }
    };
    await rounds({
      make: fresh('make', makeOne),
      downloads: fresh('downloads', async (on) => {
        await fetchAll(`${on.url}${download}`);
        await fetchAll(`${on.url}${download}&output=parquet`);
      }),
    });
    const fileBytes = snapshot.formats.csv.bytes + snapshot.formats.parquet.bytes;
    const mb = (bytes: number) => +(bytes / 1e6).toFixed(1);
    const growth = (kind: keyof typeof memory) => median(memory[kind].peak.map((peak, i) => peak - memory[kind].rest[i]!));
    const rss = {
      rest_mb: mb(median([...memory.make.rest, ...memory.downloads.rest])), files_mb: mb(fileBytes),
      make_peak_mb: mb(median(memory.make.peak)), make_growth_mb: mb(growth('make')),
      downloads_peak_mb: mb(median(memory.downloads.peak)), downloads_growth_mb: mb(growth('downloads')),
    };
    results.push({ engine, what: 'service RSS', ...rss, make_growth_vs_files: +(growth('make') / fileBytes).toFixed(2), make_growth_vs_downloads_growth: +(growth('make') / growth('downloads')).toFixed(2) });
    console.log(`${engine.padEnd(9)} service RSS (a service just started, medians): at rest ${rss.rest_mb} MB; while a snapshot is made peak ${rss.make_peak_mb} MB (+${rss.make_growth_mb} MB, ${(growth('make') / fileBytes).toFixed(2)} x its files' ${rss.files_mb} MB); while the live CSV + Parquet downloads run peak ${rss.downloads_peak_mb} MB (+${rss.downloads_growth_mb} MB)`);
  } finally {
    await serve.stop();
  }
  return results;
});
