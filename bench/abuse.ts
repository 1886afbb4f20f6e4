// bench/abuse: what cheap hostile requests cost a running `envmon serve`, on each engine. The server's
// memory is read from /proc/<pid>/status (VmRSS sampled every 50 ms, VmHWM reset before each test where
// the kernel allows) and its CPU time from /proc/<pid>/stat (utime + stime). Three tests:
//
//   replay    a backfill of BENCH_ABUSE_ROWS readings (batches of 10,000) to one station, then 10 clients
//             that resume its stream from before the backfill (Last-Event-ID) and never read, and 3 that
//             do, opened after them: server RSS before and at its peak, each reader's first byte, first
//             `readings`, `reset` and `ready` event and the bytes it got (given up after BENCH_ABUSE_WAIT_S); the
//             paused clients then stay BENCH_ABUSE_HOLD_S from their start, past STREAM_STALL_MS, and are
//             counted as cut when the server has closed them
//   bomb      4 brotli bodies at once that inflate to BENCH_ABUSE_BOMB_MB MiB of JSON whitespace, without a
//             key and with a valid one: their statuses and the server's CPU seconds per bomb (counted until
//             its CPU time stops rising)
//   flood     a normal station posting one reading every 100 ms for BENCH_ABUSE_SECONDS while (quiet) nothing
//             else happens, (slow xN) BENCH_ABUSE_SLOW uploads with a second station's key announce 1 MB and send
//             100 bytes a second (a refused one starts again after a second), (bad key x16) 16 loops post with
//             `Token wrong` as fast as they are answered: the normal station's p50/p99 and its p99 over the
//             quiet one (measured in the same run), the flood's statuses, the server's CPU seconds. Each
//             flood runs in a child process, so that its event loop is not the normal station's
//
// The hostile clients connect from their own loopback addresses (127.0.0.2-4) as an attacker would from
// elsewhere, so the per-address limits (16 batches, 30 failed keys a minute) meet them and not the normal
// station; BENCH_ABUSE_SHARED_ADDRESS=1 sends everything from 127.0.0.1. The service runs with its own
// limits but STREAMS_PER_CLIENT=50 (13 streams from one address) and RATE_LIMIT_PER_MINUTE=0.
// BENCH_ABUSE_ROWS (100000), BENCH_ABUSE_SECONDS (10), BENCH_ABUSE_SLOW (100), BENCH_ABUSE_BOMB_MB (1024,
// cached in /tmp/envmon-bomb.br), BENCH_ABUSE_WAIT_S (60), BENCH_ABUSE_HOLD_S (35).
import { execFileSync, fork } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import pg from 'pg';
import { openStream } from '../test/helpers/sse.js';
import { benchRows, chunk, eachEngine, fmt, percentile, startServe, stationsWithKeys, type Serve } from './lib.js';

const replayRows = Number(process.env.BENCH_ABUSE_ROWS ?? 100_000);
const floodSeconds = Number(process.env.BENCH_ABUSE_SECONDS ?? 10);
const slowUploads = Number(process.env.BENCH_ABUSE_SLOW ?? 100);
const bombMiB = Number(process.env.BENCH_ABUSE_BOMB_MB ?? 1024);
const waitMs = Number(process.env.BENCH_ABUSE_WAIT_S ?? 60) * 1000;
const holdMs = Number(process.env.BENCH_ABUSE_HOLD_S ?? 35) * 1000;
const shared = process.env.BENCH_ABUSE_SHARED_ADDRESS === '1';
const serveSettings = { STREAMS_PER_CLIENT: '50', RATE_LIMIT_PER_MINUTE: '0' };
const address = { bomb: shared ? '127.0.0.1' : '127.0.0.2', slow: shared ? '127.0.0.1' : '127.0.0.3', badKey: shared ? '127.0.0.1' : '127.0.0.4' };
const ingestPath = '/api/v1/ingest/environmental/';
const batchSize = 10_000;
const pausedStreams = 10;
const readingStreams = 3;
const badKeyLoops = 16;
const slowUploadBytes = 1_000_000;

// The server process: its memory and CPU time as the kernel counts them.
const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK']).toString()) || 100;
const mib = (kb: number) => kb / 1024;
function memory(pid: number): { rssMb: number; hwmMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: mib(kb('VmRSS')), hwmMb: mib(kb('VmHWM')) };
}
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command's closing parenthesis start at field 3 (state); utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}
/** Resets VmHWM to the current RSS (Linux clear_refs 5); false when the kernel does not allow it. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}
/** Samples the RSS every 50 ms until stopped; the peak is the larger of the samples and VmHWM when it was reset. */
function watchMemory(pid: number): () => number {
  const hwmReset = resetPeak(pid);
  let peak = memory(pid).rssMb;
  const timer = setInterval(() => (peak = Math.max(peak, memory(pid).rssMb)), 50);
  return () => {
    clearInterval(timer);
    const now = memory(pid);
    return Math.max(peak, now.rssMb, hwmReset ? now.hwmMb : 0);
  };
}
/** CPU seconds the server spends from now until its CPU time stops rising (two samples 500 ms apart equal, at most 30 s). */
async function settledCpu(pid: number, from: number): Promise<number> {
  let last = cpuSeconds(pid);
  for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
    await sleep(500);
    const now = cpuSeconds(pid);
    if (now === last) break;
    last = now;
  }
  return last - from;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tally = (counts: Record<string, number>, what: string) => void (counts[what] = (counts[what] ?? 0) + 1);
const show = (counts: Record<string, number>) => Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}×${fmt(v)}`).join(' ') || '-';
const ms1 = (value: number | null) => (value === null ? null : +value.toFixed(1));

async function post(url: string, key: string, station: string, readings: unknown[]): Promise<Response> {
  return fetch(`${url}${ingestPath}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
    body: JSON.stringify({ station_id: station, readings }),
  });
}

type Answer = { status: string; ms: number };

/** One raw request from `localAddress`, its body sent whole; resolves with its status (or the socket error's code). */
function request(url: string, options: { headers: Record<string, string>; body: Buffer; localAddress: string; agent?: http.Agent }): Promise<Answer> {
  const { hostname, port } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request({ host: hostname, port, method: 'POST', path: ingestPath, localAddress: options.localAddress, agent: options.agent ?? false, headers: options.headers }, (res) => {
      res.resume();
      res.once('end', () => resolve({ status: String(res.statusCode), ms: performance.now() - started }));
    });
    req.once('error', (error: NodeJS.ErrnoException) => resolve({ status: error.code ?? 'error', ms: performance.now() - started }));
    req.end(options.body);
  });
}

// ---- 1. Replay: resumptions from before a large backfill, most of them never reading.

type Reader = { status: number | null; firstByteMs: number | null; firstReadingsMs: number | null; resetMs: number | null; readyMs: number | null; bytes: number; readings: number; done: Promise<void>; close: () => void };

/** A stream client that reads everything, noting when its first byte and its first readings, reset and ready events came. */
function readStream(serve: Serve, station: string, lastEventId: string): Reader {
  const started = performance.now();
  const since = () => performance.now() - started;
  let ready!: () => void;
  const reader: Reader = { status: null, firstByteMs: null, firstReadingsMs: null, resetMs: null, readyMs: null, bytes: 0, readings: 0, done: new Promise((r) => (ready = r)), close: () => request.destroy() };
  const request = http.get(`${serve.url}/api/v1/data/stream/?stations=${station}`, { agent: false, headers: { Accept: 'text/event-stream', 'Last-Event-ID': lastEventId } }, (response) => {
    reader.status = response.statusCode!;
    let buffer = '';
    response.setEncoding('utf8');
    response.on('data', (text: string) => {
      reader.firstByteMs ??= since();
      reader.bytes += Buffer.byteLength(text);
      let from = buffer.length;
      buffer += text;
      for (let end = buffer.indexOf('\n\n', Math.max(0, from - 1)); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        from = 0;
        const name = /^event: (\w+)$/m.exec(block)?.[1];
        if (name === 'readings') {
          reader.firstReadingsMs ??= since();
          reader.readings += (JSON.parse(/^data: (.*)$/m.exec(block)![1]!) as { readings: unknown[] }).readings.length;
        } else if (name === 'reset') {
          reader.resetMs ??= since();
        } else if (name === 'ready') {
          reader.readyMs ??= since();
          ready();
        }
      }
    });
    response.once('close', () => ready());
  });
  request.on('error', () => ready());
  return reader;
}

/** A stream client that sends its request and never reads a byte of the answer. */
function pausedStream(serve: Serve, station: string, lastEventId: string): net.Socket {
  const { hostname, port } = new URL(serve.url);
  const socket = net.connect({ host: hostname, port: Number(port) });
  socket.pause();
  socket.on('error', () => {});
  socket.write(`GET /api/v1/data/stream/?stations=${station} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\nLast-Event-ID: ${lastEventId}\r\n\r\n`);
  return socket;
}

async function replay(serve: Serve, pid: number, key: string, databaseUrl: string): Promise<Record<string, unknown>> {
  const station = 'ab-replay';
  // Where a subscriber stands before the backfill: the id of its `ready` event.
  const before = await openStream(`${serve.url}/api/v1/data/stream/?stations=${station}`);
  const lastEventId = (await before.next((e) => e.event === 'ready')).id!;
  before.close();
  const posted = performance.now();
  for (const batch of chunk(benchRows(replayRows, Date.parse('2025-01-01T00:00:00Z')), batchSize)) {
    const response = await post(serve.url, key, station, batch);
    if (response.status !== 201) throw new Error(`backfill: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  }
  const backfillSeconds = (performance.now() - posted) / 1000;
  await sleep(1000);
  const rssBefore = memory(pid).rssMb;
  const cpuBefore = cpuSeconds(pid);
  const peakOf = watchMemory(pid);

  const pausedAt = Date.now();
  const paused = Array.from({ length: pausedStreams }, () => pausedStream(serve, station, lastEventId));
  await sleep(200);
  const readers = Array.from({ length: readingStreams }, () => readStream(serve, station, lastEventId));
  const allReady = Promise.all(readers.map((r) => r.done));
  await Promise.race([allReady, sleep(waitMs)]);
  // A reader still not caught up: what the server's connections are doing (a query waiting on a lock, or none).
  const stuck = readers.some((r) => r.readyMs === null) ? await serverQueries(databaseUrl) : null;
  const cpu = cpuSeconds(pid) - cpuBefore;
  // The paused clients stay until the server should have cut them (STREAM_STALL_MS, 30 s): the memory
  // they hold is watched meanwhile.
  await sleep(pausedAt + holdMs - Date.now());
  const peak = peakOf();
  const rssAfter = memory(pid).rssMb;
  // What the paused clients' sockets hold by now, and whether the server has cut them (they then end).
  const held = await Promise.all(paused.map((socket) => new Promise<{ bytes: number; cut: boolean }>((resolve) => {
    let bytes = 0;
    const timer = setTimeout(() => resolve({ bytes, cut: false }), 1000);
    socket.on('data', (c: Buffer) => (bytes += c.length));
    socket.once('end', () => (clearTimeout(timer), resolve({ bytes, cut: true })));
    socket.resume();
  })));
  for (const socket of paused) socket.destroy();
  for (const reader of readers) reader.close();
  const worst = (pick: (r: Reader) => number | null) => (readers.some((r) => pick(r) === null) ? null : Math.max(...readers.map((r) => pick(r)!)));
  return {
    backfill_rows: replayRows, backfill_seconds: +backfillSeconds.toFixed(1),
    rss_before_mb: +rssBefore.toFixed(0), rss_peak_mb: +peak.toFixed(0), rss_after_hold_mb: +rssAfter.toFixed(0), server_cpu_s: +cpu.toFixed(2),
    paused_held_s: +((Date.now() - pausedAt) / 1000).toFixed(1),
    readers: readers.map((r) => ({ status: r.status, first_byte_ms: ms1(r.firstByteMs), first_readings_ms: ms1(r.firstReadingsMs), reset_ms: ms1(r.resetMs), ready_ms: ms1(r.readyMs), bytes: r.bytes, readings: r.readings })),
    worst_ready_ms: ms1(worst((r) => r.readyMs)), worst_reset_ms: ms1(worst((r) => r.resetMs)),
    paused_bytes_on_resume_max: Math.max(...held.map((h) => h.bytes)), paused_cut_by_server: held.filter((h) => h.cut).length,
    ...(stuck ? { server_queries_when_stuck: stuck } : {}),
  };
}

/** The database's other sessions: state, wait event and the start of their query. */
async function serverQueries(databaseUrl: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ line: string }>(`select concat_ws(' | ', state, wait_event_type, wait_event, round(extract(epoch from now() - query_start)::numeric, 1) || ' s', left(query, 120)) as line
      from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() order by query_start`);
    return rows.map((r) => r.line);
  } finally {
    await client.end();
  }
}

// ---- 2. Brotli bombs: small bodies that inflate to a GiB.

async function brotliBomb(): Promise<Buffer> {
  const path = bombMiB === 1024 ? '/tmp/envmon-bomb.br' : `/tmp/envmon-bomb-${bombMiB}m.br`;
  if (existsSync(path)) return readFileSync(path);
  // A JSON object opened, then whitespace: valid JSON as far as it goes, and as compressible as bytes get.
  // Quality 5 with a 16 MiB window compresses runs as well as 11 does (measured: 64 MiB to ~52 bytes) in a tenth of the time.
  const encoder = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_LGWIN]: 24, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bombMiB * 2 ** 20 } });
  const pieces: Buffer[] = [];
  encoder.on('data', (c: Buffer) => pieces.push(c));
  const ended = new Promise((resolve) => encoder.once('end', resolve));
  const head = Buffer.from('{"station_id":"ab-other","readings":[');
  const spaces = Buffer.alloc(2 ** 20, 0x20);
  encoder.write(Buffer.concat([head, spaces.subarray(head.length)]));
  for (let i = 1; i < bombMiB; i++) if (!encoder.write(spaces)) await new Promise((resolve) => encoder.once('drain', resolve));
  encoder.end();
  await ended;
  const bomb = Buffer.concat(pieces);
  let inflated = 0;
  const check = zlib.createBrotliDecompress();
  check.on('data', (c: Buffer) => (inflated += c.length));
  await new Promise((resolve, reject) => check.once('end', resolve).once('error', reject).end(bomb));
  if (inflated !== bombMiB * 2 ** 20) throw new Error(`the bomb inflates to ${inflated} bytes`);
  writeFileSync(path, bomb);
  return bomb;
}

async function bombs(serve: Serve, pid: number, bomb: Buffer, key: string | null): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json', 'Content-Encoding': 'br', 'Content-Length': String(bomb.length) };
  if (key) headers.Authorization = `Token ${key}`;
  const cpuBefore = cpuSeconds(pid);
  const peakOf = watchMemory(pid);
  const answers = await Promise.all(Array.from({ length: 4 }, () => request(serve.url, { headers, body: bomb, localAddress: address.bomb })));
  const cpu = await settledCpu(pid, cpuBefore);
  const peak = peakOf();
  const statuses: Record<string, number> = {};
  for (const answer of answers) tally(statuses, answer.status);
  return { with_key: key !== null, bombs: 4, bomb_bytes: bomb.length, inflates_to_mib: bombMiB, statuses, slowest_answer_ms: ms1(Math.max(...answers.map((a) => a.ms))), cpu_s_per_bomb: +(cpu / 4).toFixed(3), rss_peak_mb: +peak.toFixed(0) };
}

// ---- 3. Floods beside a normal station.

/** The normal station: one reading every 100 ms, each posted when the last was answered, for `seconds`. */
async function normalStation(serve: Serve, key: string, station: string, seconds: number, clock: { next: number }): Promise<{ latencies: number[]; statuses: Record<string, number> }> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  for (const end = performance.now() + seconds * 1000; performance.now() < end;) {
    const started = performance.now();
    const status = await post(serve.url, key, station, benchRows(1, (clock.next += 60_000))).then(
      async (response) => (await response.arrayBuffer(), String(response.status)),
      (error: Error) => error.message,
    );
    latencies.push(performance.now() - started);
    tally(statuses, status);
    await sleep(Math.max(0, 100 - (performance.now() - started)));
  }
  return { latencies: latencies.sort((a, b) => a - b), statuses };
}

type Flood = { stop: () => Promise<FloodResult> };
type FloodResult = { statuses: Record<string, number>; requests: number };
type FloodOrder = { kind: 'slow'; url: string; key: string; count: number } | { kind: 'badKey'; url: string };

/**
 * A flood run by a child process (this script again), so that its event loop is not the normal station's:
 * the normal station's latencies are then the server's, not the bench's. Stopping it destroys its sockets
 * and ends the process.
 */
async function floodProcess(order: FloodOrder): Promise<Flood> {
  const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, BENCH_ABUSE_FLOOD: JSON.stringify(order) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  await Promise.race([once(child, 'message'), exited.then(() => Promise.reject(new Error('the flood process exited')))]);
  return {
    stop: async () => {
      const answered = once(child, 'message') as Promise<[FloodResult]>;
      child.send('stop');
      const [result] = await answered;
      await exited;
      return result;
    },
  };
}

/** In the flood process: runs the flood it was given until told to stop, then reports and exits. */
async function runFlood(order: FloodOrder): Promise<void> {
  const flood = order.kind === 'slow' ? slowFlood(order.url, order.key, order.count) : badKeyFlood(order.url);
  process.once('disconnect', () => process.exit(1));
  process.once('message', async () => {
    const result = await flood.stop();
    process.send!(result, () => process.exit(0));
  });
  process.send!('started');
}

/**
 * `count` uploads that announce a megabyte and send 100 bytes a second; one that is answered (or fails)
 * starts again a second later. Stopping destroys every socket.
 */
function slowFlood(url: string, key: string, count: number): Flood {
  const { hostname, port } = new URL(url);
  const statuses: Record<string, number> = {};
  const open = new Set<http.ClientRequest>();
  const timers = new Set<NodeJS.Timeout>();
  let running = true;
  let requests = 0;
  const later = (fn: () => void, ms: number) => {
    const timer = setTimeout(() => (timers.delete(timer), fn()), ms);
    timers.add(timer);
  };
  const launch = () => {
    if (!running) return;
    requests++;
    const req = http.request({
      host: hostname, port, method: 'POST', path: ingestPath, localAddress: address.slow, agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': String(slowUploadBytes), Authorization: `Token ${key}` },
    });
    open.add(req);
    let sent = 0;
    let over = false;
    const finish = (what: string) => {
      if (over || !running) return;
      over = true;
      open.delete(req);
      req.destroy();
      tally(statuses, what);
      later(launch, 1000);
    };
    const drip = () => {
      if (over || !running) return;
      const piece = Buffer.alloc(Math.min(100, slowUploadBytes - sent), 0x20);
      if (sent === 0) Buffer.from('{"station_id":"ab-slow","readings":[').copy(piece);
      req.write(piece);
      sent += piece.length;
      if (sent < slowUploadBytes) later(drip, 1000);
    };
    req.on('response', (res) => (res.resume(), finish(String(res.statusCode))));
    req.on('error', (error: NodeJS.ErrnoException) => finish(error.code ?? 'error'));
    req.on('close', () => finish('closed'));
    drip();
  };
  for (let i = 0; i < count; i++) launch();
  return {
    stop: async () => {
      const result = { statuses: { ...statuses, uploading_at_end: open.size }, requests };
      running = false;
      for (const timer of timers) clearTimeout(timer);
      for (const req of open) req.destroy();
      open.clear();
      return result;
    },
  };
}

/** `badKeyLoops` loops posting a reading with `Token wrong` on keep-alive connections, each as soon as the last was answered. */
function badKeyFlood(url: string): Flood {
  const agent = new http.Agent({ keepAlive: true, maxSockets: badKeyLoops });
  const statuses: Record<string, number> = {};
  const body = Buffer.from(JSON.stringify({ station_id: 'ab-normal', readings: benchRows(1, Date.now() - 86_400_000) }));
  const headers = { 'Content-Type': 'application/json', 'Content-Length': String(body.length), Authorization: 'Token wrong' };
  let running = true;
  let requests = 0;
  const loops = Array.from({ length: badKeyLoops }, async () => {
    while (running) {
      const answer = await request(url, { headers, body, localAddress: address.badKey, agent });
      requests++;
      tally(statuses, answer.status);
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      agent.destroy();
      return { statuses, requests };
    },
  };
}

async function floods(serve: Serve, pid: number, normalKey: string, slowKey: string): Promise<Record<string, unknown>[]> {
  const clock = { next: Date.now() - 30 * 86_400_000 };
  const phases: [string, FloodOrder | null][] = [
    ['quiet', null],
    [`slow x${slowUploads}`, { kind: 'slow', url: serve.url, key: slowKey, count: slowUploads }],
    [`bad key x${badKeyLoops}`, { kind: 'badKey', url: serve.url }],
  ];
  // Warm the normal station's connection and the ingest path before anything is measured.
  await normalStation(serve, normalKey, 'ab-normal', 1, clock);
  const rows: Record<string, unknown>[] = [];
  let quietP99 = NaN;
  for (const [phase, order] of phases) {
    const flood = order ? await floodProcess(order) : null;
    if (flood) await sleep(1000);
    const cpuBefore = cpuSeconds(pid);
    const peakOf = watchMemory(pid);
    const normal = await normalStation(serve, normalKey, 'ab-normal', floodSeconds, clock);
    const cpu = cpuSeconds(pid) - cpuBefore;
    const peak = peakOf();
    const flooded = (await flood?.stop()) ?? null;
    const [p50, p99] = [percentile(normal.latencies, 50), percentile(normal.latencies, 99)];
    if (phase === 'quiet') quietP99 = p99;
    rows.push({
      phase, normal_posts: normal.latencies.length, normal_statuses: normal.statuses,
      p50_ms: ms1(p50), p99_ms: ms1(p99), max_ms: ms1(normal.latencies.at(-1) ?? NaN), p99_over_quiet: +(p99 / quietP99).toFixed(2),
      flood_requests: flooded?.requests ?? 0, flood_statuses: flooded?.statuses ?? {}, server_cpu_s: +cpu.toFixed(2), rss_peak_mb: +peak.toFixed(0),
    });
    // Whatever the flood left on the server (sockets closing, refusals being answered) settles before the next phase.
    await sleep(1000);
  }
  return rows;
}

async function main(): Promise<void> {
  const bomb = await brotliBomb();
  console.log(`limits: STREAMS_PER_CLIENT=50, RATE_LIMIT_PER_MINUTE=0, the rest the service's defaults (16 batches per address, 8 per station, ` +
    `30 failed keys a minute per address, STREAM_STALL_MS 30000, INGEST_MAX_BYTES 5 MiB); hostile clients from ${shared ? '127.0.0.1 with the normal station' : 'their own addresses 127.0.0.2-4'}`);
  console.log(`bomb: ${fmt(bomb.length)} bytes of brotli inflating to ${fmt(bombMiB)} MiB`);

  await eachEngine('abuse', async (engine, databaseUrl) => {
    const results: Record<string, unknown>[] = [];
    const [replayKey, normalKey, slowKey] = await stationsWithKeys(databaseUrl, ['ab-replay', 'ab-normal', 'ab-slow']);
    const serve = await startServe(databaseUrl, serveSettings);
    const pid = serve.child.pid!;
    const e = engine.padEnd(9);
    try {
      const r = await replay(serve, pid, replayKey!, databaseUrl);
      results.push({ engine, test: 'replay', ...r });
      console.log(`${e} replay: ${fmt(replayRows)} readings backfilled in ${r.backfill_seconds} s; ${pausedStreams} paused + ${readingStreams} reading resumptions: ` +
        `server CPU ${r.server_cpu_s} s until the readers were caught up; RSS ${r.rss_before_mb} MB before, peak ${r.rss_peak_mb} MB, ${r.rss_after_hold_mb} MB after ${r.paused_held_s} s; ` +
        `paused clients then resumed got ≤ ${fmt(r.paused_bytes_on_resume_max as number)} bytes in 1 s, ${r.paused_cut_by_server} of ${pausedStreams} had been cut by the server`);
      for (const [i, reader] of (r.readers as Record<string, number | null>[]).entries()) {
        const t = (v: number | null | undefined) => (v == null ? `>${waitMs / 1000} s` : `${fmt(v, 0)} ms`);
        console.log(`${e}   reader ${i + 1}: ${reader.status}, first byte ${t(reader.first_byte_ms)}, first readings ${t(reader.first_readings_ms)}, reset ${t(reader.reset_ms)}, ready ${t(reader.ready_ms)}, ` +
          `${fmt(reader.bytes! / 2 ** 20, 1)} MiB, ${fmt(reader.readings!)} readings`);
      }

      for (const key of [null, normalKey!]) {
        const b = await bombs(serve, pid, bomb, key);
        results.push({ engine, test: 'bomb', ...b });
        console.log(`${e} bomb ${key ? 'valid key' : 'no key   '}: 4 × ${fmt(bomb.length)} B → ${fmt(bombMiB)} MiB: ${show(b.statuses as Record<string, number>)}, ` +
          `slowest answer ${fmt(b.slowest_answer_ms as number, 0)} ms, server CPU ${b.cpu_s_per_bomb} s per bomb, RSS peak ${b.rss_peak_mb} MB`);
      }

      for (const f of await floods(serve, pid, normalKey!, slowKey!)) {
        results.push({ engine, test: 'flood', ...f });
        console.log(`${e} ${String(f.phase).padEnd(12)} normal p50 ${fmt(f.p50_ms as number, 1).padStart(6)} ms p99 ${fmt(f.p99_ms as number, 1).padStart(7)} ms (${f.p99_over_quiet}× quiet) ` +
          `max ${fmt(f.max_ms as number, 1)} ms, ${show(f.normal_statuses as Record<string, number>)}; flood ${fmt(f.flood_requests as number)} requests: ` +
          `${show(f.flood_statuses as Record<string, number>)}; server CPU ${f.server_cpu_s} s, RSS peak ${f.rss_peak_mb} MB`);
      }
      if (r.server_queries_when_stuck) console.log(`${e}   the server's sessions while a reader was not caught up:\n${(r.server_queries_when_stuck as string[]).map((l) => `${e}     ${l}`).join('\n')}`);
      const problems = serve.stderr().split('\n').filter((line) => /"level":(40|50|60)/.test(line));
      if (problems.length) console.log(`${e} server logged ${problems.length} warning(s) or error(s); first: ${problems[0]!.slice(0, 400)}`);
    } finally {
      await serve.stop();
    }
    return results;
  });
}

const floodOrder = process.env.BENCH_ABUSE_FLOOD;
if (floodOrder) await runFlood(JSON.parse(floodOrder) as FloodOrder);
else await main();
