// Shared by the bench scripts: the database server (as the tests find it), a real `envmon serve`
// process per database, and raw COPY as the limit every figure is compared with.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import { pipeline } from 'node:stream/promises';
import { Readable } from 'node:stream';
import type { Engine } from '../src/config.js';
import { createSlonikPool } from '../src/db/pool.js';
import { issueKey } from '../src/stations/keys.js';
import { upsertStation } from '../src/stations/queries.js';
import { startTestServer, type TestServer } from '../test/helpers/database.js';
import { envmonBin, spawnServe } from '../test/helpers/cli.js';

export async function openServer(): Promise<TestServer> {
  const server = await startTestServer({ ...process.env, TEST_DATABASE_URL: process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL });
  console.log(`engines: ${server.engines.join(', ')}${server.leftOut.length ? ` (left out: ${server.leftOut.join('; ')})` : ''}`);
  return server;
}

/**
 * Runs `measure` once per engine the server offers, each on a fresh database that is dropped afterwards,
 * collects the rows it returns and saves them as bench/out/<name>.json.
 */
export async function eachEngine(name: string, measure: (engine: Engine, databaseUrl: string) => Promise<Record<string, unknown>[]>): Promise<void> {
  const server = await openServer();
  const results: Record<string, unknown>[] = [];
  try {
    for (const engine of server.engines) {
      const databaseUrl = await server.createDatabase(engine);
      try {
        results.push(...(await measure(engine, databaseUrl)));
      } finally {
        await server.dropDatabase(databaseUrl);
      }
    }
  } finally {
    await server.close();
  }
  saveResults(name, results);
}

export type Serve = { url: string; child: ChildProcess; stderr: () => string; stop: () => Promise<void> };

/** Starts `envmon serve` on a free port against the database, as production runs it. */
export async function startServe(databaseUrl: string, settings: Record<string, string> = {}, bin?: string): Promise<Serve> {
  const serve = await spawnServe({ LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', DATABASE_URL: databaseUrl, ...settings }, [], bin);
  return { url: serve.url, child: serve.child, stderr: serve.stderr, stop: async () => void (await serve.stop()) };
}

/** Runs a CLI command and returns its stdout. */
export function envmon(args: string[], databaseUrl: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [envmonBin, ...args], {
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`envmon ${args.join(' ')} exited ${code}`))));
  });
}

/** Active stations `ids` (made or updated), each with a fresh key, in the order given. */
export async function stationsWithKeys(databaseUrl: string, ids: readonly string[]): Promise<string[]> {
  const pool = await createSlonikPool(databaseUrl, { poolSize: 1, statementTimeoutMs: 600_000 });
  try {
    const keys: string[] = [];
    for (const id of ids) {
      await upsertStation(pool, { station_id: id, name: id, location_name: 'Bench', altitude_m: 210, latitude: 45, longitude: 6, status: 'active' });
      keys.push((await issueKey(pool, id)).key);
    }
    return keys;
  } finally {
    await pool.end();
  }
}

export type BenchRow = {
  timestamp: string;
  temperature_c: number; humidity_rh: number; pressure_hpa: number; altitude_m: number; pm1_0: number;
  pm2_5: number; pm10: number; co2_ppm: number; co_ppm: number; uv_index: number;
  firmware_version: string; module_data: { board: string };
};

/** `count` one-minute readings from `start` with every field filled, as a station sends them. */
export function benchRows(count: number, start: number): BenchRow[] {
  return Array.from({ length: count }, (_, i) => {
    const phase = i / 1440;
    return {
      timestamp: new Date(start + i * 60_000).toISOString(),
      temperature_c: Math.round((10 + 8 * Math.sin(phase * 6.283)) * 100) / 100,
      humidity_rh: Math.round((60 + 20 * Math.cos(phase * 6.283)) * 10) / 10,
      pressure_hpa: Math.round((1005 + 5 * Math.sin(phase)) * 10) / 10,
      altitude_m: 210,
      pm1_0: 3.1, pm2_5: Math.round((8 + (i % 17)) * 10) / 10, pm10: 12.4,
      co2_ppm: 420 + (i % 30), co_ppm: 0.3, uv_index: 2.5,
      firmware_version: '2.4.1', module_data: { board: 'v2' },
    };
  });
}

/**
 * The limit: COPY of the same rows into `readings` on one connection, with the portable engine's rollup
 * triggers switched off (session_replication_role) so that it measures the raw table. As CSV (what psql's
 * \copy of a file does, and the limit the targets name), or in PostgreSQL's binary format, which the
 * service sends: the same rows cost the database less to take that way. The bytes are made before the
 * clock starts, here independently of the service's code.
 */
export async function copyReadings(databaseUrl: string, stationId: string, rows: BenchRow[], format: 'csv' | 'binary' = 'csv'): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`set session_replication_role = replica`);
    const pieces = format === 'csv' ? chunk(rows, 1000).map((c) => c.map((r) => csvLine(stationId, r)).join('')) : binaryPieces(stationId, rows);
    const started = performance.now();
    await pipeline(
      Readable.from(pieces),
      client.query(copyStreams.from(`copy readings (station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index, quality_flag, firmware_version, module_data) from stdin with (format ${format})`)),
    );
    const seconds = (performance.now() - started) / 1000;
    await client.query(`delete from readings where station_id = $1`, [stationId]);
    return rows.length / seconds;
  } finally {
    await client.end();
  }
}

const measurements = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'] as const;

function csvLine(stationId: string, r: BenchRow): string {
  return [stationId, r.timestamp, ...measurements.map((m) => r[m]), 'ok', r.firmware_version, `"${JSON.stringify(r.module_data).replace(/"/g, '""')}"`].join(',') + '\n';
}

/** The rows as COPY's binary format (signature, flags, tuples of length-prefixed fields, end), in pieces of 1,000. */
function binaryPieces(stationId: string, rows: BenchRow[]): Buffer[] {
  const field = (bytes: Buffer) => Buffer.concat([int32(bytes.length), bytes]);
  const int32 = (n: number) => { const b = Buffer.alloc(4); b.writeInt32BE(n); return b; };
  const tuple = (r: BenchRow) => {
    const ts = Buffer.alloc(8);
    ts.writeBigInt64BE(BigInt(Date.parse(r.timestamp) - Date.UTC(2000, 0, 1)) * 1000n);
    const numbers = measurements.map((m) => { const b = Buffer.alloc(8); b.writeDoubleBE(r[m]); return field(b); });
    return Buffer.concat([Buffer.from([0, 15]), field(Buffer.from(stationId)), field(ts), ...numbers, field(Buffer.from('ok')), field(Buffer.from(r.firmware_version)),
      field(Buffer.concat([Buffer.from([1]), Buffer.from(JSON.stringify(r.module_data))]))]);
  };
  const pieces = chunk(rows, 1000).map((c) => Buffer.concat(c.map(tuple)));
  return [Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]), ...pieces, Buffer.from([0xff, 0xff])];
}

/** Runs `fn` on a connection of its own to `databaseUrl`, set as the service's sessions are (src/db/pool.ts). */
export async function withClient<T>(databaseUrl: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`set timezone = 'UTC'; set jit = off`);
    return await fn(client);
  } finally {
    await client.end();
  }
}

export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/**
 * The median milliseconds of `runs` calls of `fn`, after two unmeasured ones that warm it; `before`, when
 * given, runs ahead of each call, unmeasured.
 */
export async function medianMs(runs: number, fn: () => Promise<void>, before?: () => Promise<void>): Promise<number> {
  const times: number[] = [];
  for (let i = -2; i < runs; i++) {
    await before?.();
    const started = performance.now();
    await fn();
    if (i >= 0) times.push(performance.now() - started);
  }
  return percentile(times.sort((a, b) => a - b), 50);
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function saveResults(name: string, results: unknown): void {
  mkdirSync('bench/out', { recursive: true });
  writeFileSync(`bench/out/${name}.json`, JSON.stringify(results, null, 2));
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
