import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { anotherInstance, describeEngines, type TestEnv } from '../../helpers/app.js';
import { ArchiveLog, between, csvRows, type Posted } from '../../helpers/archiveLog.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { seeded } from '../../helpers/readings.js';

// Random sequences of live ingest, backfill, re-sent batches, overrides and deletions, with snapshots
// and as_of instants taken along the way. At the end every snapshot's files are the bytes they were
// when it was made (from this service and from another one started after them), and every read as of an
// instant is what the test's own append-only log says the archive held then. SEED=n replays a run.
const seed = Number(process.env.SEED ?? Math.floor(Math.random() * 1e9));
const steps = 30;
const minute = 60_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

type Kept = { id: string; files: Record<'csv' | 'parquet', { path: string; bytes: Buffer }> };

async function keep(env: TestEnv, url: string): Promise<Kept> {
  const response = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
  const record = await response.json() as { id: string; formats: Record<'csv' | 'parquet', { url: string; sha256: string }> };
  assert.equal(response.status, 201, JSON.stringify(record));
  const files = {} as Kept['files'];
  for (const format of ['csv', 'parquet'] as const) {
    const path = new URL(record.formats[format].url).pathname;
    const bytes = Buffer.from(await (await env.get(path)).arrayBuffer());
    assert.equal(sha256(bytes), record.formats[format].sha256);
    files[format] = { path, bytes };
  }
  return { id: record.id, files };
}

describeEngines('the archive under random writes, as of any instant', (env) => {
  const other = anotherInstance(env);

  it(`keeps every snapshot's bytes and answers every instant as the log says (SEED=${seed})`, async function () {
    this.timeout(240_000);
    console.log(`      SEED=${seed}`);
    const random = seeded(seed);
    const pick = (n: number) => Math.floor(random() * n);
    const station = 'prop-01';
    const key = await stationWithKey(env(), station);
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
    const batch = (first: number, count: number) =>
      Array.from({ length: count }, (_, i) => ({ ts: slot(first + i), temperature_c: Math.round(random() * 4000 - 1000) / 100 }));
    const range = () => {
      const from = pick(newest);
      return [slot(from), slot(from + 1 + pick(120))] as const;
    };
    await post(batch(1900, 100));
    for (let step = 0; step < steps; step++) {
      const op = pick(7);
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
      } else if (op === 5) {
        snapshots.push(await keep(env(), pick(2) === 0 ? `/api/v1/data/download/?station=${station}&columns=all`
          : `/api/v1/data/aggregate/?station=${station}&period=hour&metrics=temperature_c`));
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
    for (const kept of snapshots) {
      for (const format of ['csv', 'parquet'] as const) {
        for (const [name, origin] of [['this service', env().origin], ['another', other().url]] as const) {
          const bytes = Buffer.from(await (await fetch(`${origin}${kept.files[format].path}`)).arrayBuffer());
          assert.ok(bytes.equals(kept.files[format].bytes), `snapshot ${kept.id} ${format} from ${name} (SEED=${seed})`);
        }
      }
    }
  });
});
