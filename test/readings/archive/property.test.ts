import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { describeEngines } from '../../helpers/app.js';
import { ArchiveLog, between, csvRows, type Posted } from '../../helpers/archiveLog.js';
import { runCli, spawnServe, type ServeProcess } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { seeded } from '../../helpers/readings.js';

// Random sequences of live ingest, backfill, re-sent batches, overrides, deletions and quality-control
// configurations set, with snapshots of downloads, aggregates and compare (made by either of two
// services) and as_of instants taken along the way, and the second service restarted. The second one
// reads with plans that return rows in another order (parallel scans, no index scans). At the end every
// snapshot's files are the bytes they were when it was made (from both services, and made again from the
// archive under those plans), every aggregate's and compare's rows read as of its instant from either
// service are the snapshot's, and every read as of an instant is what the test's own append-only log
// says the archive held then. SEED=n replays a run.
const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1e9));
const steps = 40;
const minute = 60_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

// Settings under which PostgreSQL plans the same queries otherwise: no index or bitmap scans (rows in the
// heap's order, which backfills and deletions mix, and sorted again only by the query's own keys, so that
// a bucket's readings reach its sums in another order) and parallel workers wherever the planner may use
// them (rows from each in the order they come).
const shuffled = ['parallel_setup_cost=0', 'parallel_tuple_cost=0', 'min_parallel_table_scan_size=0', 'min_parallel_index_scan_size=0',
  'parallel_leader_participation=off', 'enable_indexscan=off', 'enable_indexonlyscan=off', 'enable_bitmapscan=off', 'enable_incremental_sort=off']
  .map((setting) => `-c ${setting}`).join(' ');
const shuffledUrl = (url: string) => {
  const parsed = new URL(url);
  parsed.searchParams.set('options', shuffled);
  return parsed.toString();
};

type Kept = { id: string; url: string; asOf: string; files: Record<'csv' | 'parquet', { path: string; bytes: Buffer }> };

async function keep(origin: string, url: string): Promise<Kept> {
  const response = await fetch(`${origin}/api/v1/snapshots/`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
  const record = await response.json() as { id: string; as_of: string; formats: Record<'csv' | 'parquet', { url: string; sha256: string }> };
  assert.equal(response.status, 201, JSON.stringify(record));
  const files = {} as Kept['files'];
  for (const format of ['csv', 'parquet'] as const) {
    const path = new URL(record.formats[format].url).pathname;
    const bytes = Buffer.from(await (await fetch(`${origin}${path}`)).arrayBuffer());
    assert.equal(sha256(bytes), record.formats[format].sha256);
    files[format] = { path, bytes };
  }
  return { id: record.id, url, asOf: record.as_of, files };
}

const withoutComments = (text: string) => text.split('\n').filter((line) => line !== '' && !line.startsWith('#'));

/** A compare answer (JSON) as the rows of its CSV. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const compareRows = (body: any) => {
  const stationIds = Object.keys(body.series).sort();
  return [`timestamp,${stationIds.join(',')}`, ...body.timestamps.map((t: string, i: number) => `${t},${stationIds.map((id) => body.series[id][i] ?? '').join(',')}`)];
};

describeEngines('the archive under random writes, as of any instant', (env) => {
  // The second service, on the same database, reading with the shuffling plans; restarted along the way.
  let other: ServeProcess | undefined;
  const startOther = async () => {
    other = await spawnServe({ DATABASE_URL: shuffledUrl(env().databaseUrl), RATE_LIMIT_PER_MINUTE: '0' });
  };
  before(async function () {
    this.timeout(30_000);
    await startOther();
  });
  after(async () => {
    await other?.stop();
  });

  it(`keeps every snapshot's bytes and answers every instant as the log says (SEED=${seed})`, async function () {
    this.timeout(300_000);
    console.log(`      SEED=${seed}`);
    const random = seeded(seed);
    const pick = (n: number) => Math.floor(random() * n);
    const station = 'prop-01';
    const key = await stationWithKey(env(), station);
    // A second station for compare, with readings of its own from the start.
    const neighbour = 'prop-02';
    const neighbourKey = await stationWithKey(env(), neighbour);
    const log = new ArchiveLog();
    // A grid of one-minute slots over the three days before the last whole hour: live readings take the
    // slots after the newest, backfills any earlier ones.
    const origin = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3 * 86_400_000;
    const slot = (i: number) => origin + i * minute;
    let newest = 2000;
    const sent: Posted[][] = [];
    const instants: string[] = [];
    const snapshots: Kept[] = [];
    const post = async (readings: Posted[]) => {
      const at = await between();
      const { status, body } = await postBatch(env(), key, { station_id: station, readings: readings.map((r) => ({ timestamp: new Date(r.ts).toISOString(), temperature_c: r.temperature_c })) });
      assert.equal(status, 201, JSON.stringify(body));
      log.posted(at, readings);
      sent.push(readings);
    };
    // Values with 17 significant digits, whose sums in doubles depend on their order.
    const value = () => Number((0.5 + random() * 30).toPrecision(17));
    const batch = (first: number, count: number) => Array.from({ length: count }, (_, i) => ({ ts: slot(first + i), temperature_c: value() }));
    const neighbours = Array.from({ length: 600 }, (_, i) => ({ timestamp: new Date(slot(1600 + i * 2)).toISOString(), temperature_c: value() }));
    assert.equal((await postBatch(env(), neighbourKey, { station_id: neighbour, readings: neighbours })).status, 201);
    // The snapshots taken: downloads, aggregates of every period (one in a zone that cuts UTC hours, one
    // with qc=pass, one with percentiles), compare in UTC and in a zone.
    const aggregates = [
      `station=${station}&period=hour&metrics=temperature_c`,
      `station=${station}&period=hour&qc=pass&metrics=temperature_c`,
      `station=${station}&period=day&tz=Asia/Kolkata`,
      `station=${station}&period=week&percentiles=10,50,90`,
      `station=${station}&period=month&tz=Europe/Zurich`,
    ].map((query) => `/api/v1/data/aggregate/?${query}`);
    const compares = [`stations=${station},${neighbour}&hours=96`, `stations=${station},${neighbour}&hours=80&tz=Asia/Kolkata`]
      .map((query) => `/api/v1/data/compare/?${query}`);
    const queries = [`/api/v1/data/download/?station=${station}&columns=all&qc=true`, ...aggregates, ...compares];
    // Quality-control configurations that pass some readings and fail others.
    const qcConfig = async (step: number) => {
      const low = Math.round(random() * 20 - 10);
      const file = path.join(tmpdir(), `envmon-property-${process.pid}-${step}.json`);
      await writeFile(file, JSON.stringify({ streams: { temperature_c: { qartod: {
        gross_range_test: { fail_span: [low, low + 20 + pick(10)] },
        spike_test: { suspect_threshold: 5 + pick(10), fail_threshold: 20 },
      } } } }));
      return file;
    };
    const cli = (args: string[]) => runCli(args, { DATABASE_URL: env().databaseUrl });
    const range = () => {
      const from = pick(newest);
      return [slot(from), slot(from + 1 + pick(120))] as const;
    };
    await post(batch(1900, 100));
    for (let step = 0; step < steps; step++) {
      // Every run sets a configuration and restarts the second service at least once.
      const op = step === 10 ? 7 : step === 20 ? 8 : pick(10);
      if (op === 0) {
        const count = 1 + pick(5);
        await post(batch(newest, count));
        newest += count;
      } else if (op === 1) {
        await post(batch(pick(newest - 200), 1 + pick(200)));
      } else if (op === 2 && sent.length > 0) {
        // A re-sent batch with other values: the first values stay.
        await post(sent[pick(sent.length)]!.map((r) => ({ ts: r.ts, temperature_c: r.temperature_c + 1 })));
      } else if (op === 3) {
        const [from, to] = range();
        const flag = (['invalid', 'suspect', 'ok'] as const)[pick(3)]!;
        log.flagged(await between(), from, to, flag);
        await recordOverride(env().db, { stationId: station, from: new Date(from).toISOString(), to: new Date(to).toISOString(), flag, reason: `step ${step}` });
      } else if (op === 4) {
        const [from, to] = range();
        log.deleted(await between(), from, to);
        await deleteReadings(env().db, { stationId: station, from: new Date(from).toISOString(), to: new Date(to).toISOString(), reason: `step ${step}` });
      } else if (op === 5 || op === 6) {
        // Made by either service.
        snapshots.push(await keep(pick(2) === 0 ? env().origin : other!.url, queries[pick(queries.length)]!));
      } else if (op === 7) {
        const set = pick(4) === 0 ? await cli(['qc', 'reset', station]) : await cli(['qc', 'set', station, await qcConfig(step), '--reason', `step ${step}`]);
        assert.equal(set.code, 0, set.stderr);
      } else if (op === 8) {
        await other!.stop();
        await startOther();
      } else {
        instants.push(await between());
      }
    }
    instants.push(await between());

    for (const instant of instants) {
      const response = await env().get(`/api/v1/data/download/?station=${station}&as_of=${instant}`);
      const rows = csvRows(await response.text()).map((line) => {
        const fields = line.split(',');
        return `${fields[0]},${fields[1]},${fields[7]}`;
      });
      const held = log.heldAt(instant);
      assert.deepEqual(rows, held.map((r) => `${new Date(r.ts).toISOString()},${r.temperature_c},${r.flag}`), `as of ${instant} (SEED=${seed})`);
      const hourly = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=hour&metrics=temperature_c&as_of=${instant}`);
      const counts = new Map<string, number>();
      for (const r of held) {
        const hour = new Date(Math.floor(r.ts / 3_600_000) * 3_600_000).toISOString();
        counts.set(hour, (counts.get(hour) ?? 0) + 1);
      }
      assert.deepEqual(
        hourly.body.results.map((r: { period_start: string; count: number }) => [r.period_start, r.count]),
        [...counts].sort(([a], [b]) => (a < b ? -1 : 1)),
        `hourly counts as of ${instant} (SEED=${seed})`,
      );
    }
    // A snapshot of each aggregate and compare query at the end, so that every kind is held at least once.
    for (const url of [...aggregates, ...compares]) snapshots.push(await keep(env().origin, url));

    const services = [['this service', env().origin], ['the shuffled one', other!.url]] as const;
    for (const kept of snapshots) {
      for (const format of ['csv', 'parquet'] as const) {
        for (const [name, origin] of services) {
          const bytes = Buffer.from(await (await fetch(`${origin}${kept.files[format].path}`)).arrayBuffer());
          assert.ok(bytes.equals(kept.files[format].bytes), `snapshot ${kept.id} ${format} from ${name} (SEED=${seed})`);
        }
      }
      // The rows read as of the snapshot's instant, from either service, are the snapshot's.
      const rows = withoutComments(kept.files.csv.bytes.toString());
      for (const [name, origin] of services) {
        const asOf = `${kept.url}&as_of=${kept.asOf}`;
        if (kept.url.includes('/aggregate/')) {
          const read = await fetch(`${origin}${asOf}&output=csv`);
          assert.equal(read.status, 200);
          assert.deepEqual(withoutComments(await read.text()), rows, `${asOf} from ${name}, snapshot ${kept.id} (SEED=${seed})`);
        } else if (kept.url.includes('/compare/')) {
          const read = await fetch(`${origin}${asOf}`);
          assert.equal(read.status, 200);
          assert.deepEqual(compareRows(await read.json()), rows, `${asOf} from ${name}, snapshot ${kept.id} (SEED=${seed})`);
        }
      }
    }
    // Every snapshot's files made again from the archive under the shuffling plans: the digests recorded.
    const verified = await runCli(['snapshots', 'verify'], { DATABASE_URL: shuffledUrl(env().databaseUrl) });
    assert.equal(verified.code, 0, `${verified.stdout}${verified.stderr} (SEED=${seed})`);
    assert.match(verified.stdout, new RegExp(`^${new Set(snapshots.map((k) => k.id)).size} snapshots? verified, 0 differ`, 'm'));
    // The live aggregates (from the rollups), from either service, are those read as of now.
    const now = await between();
    for (const url of aggregates) {
      const asOf = withoutComments(await (await env().get(`${url}&output=csv&as_of=${now}`)).text());
      for (const [name, origin] of services) {
        assert.deepEqual(withoutComments(await (await fetch(`${origin}${url}&output=csv`)).text()), asOf, `${url} live from ${name} (SEED=${seed})`);
      }
    }
  });
});
