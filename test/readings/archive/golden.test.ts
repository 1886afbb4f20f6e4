import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'slonik';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { recordOverride } from '../../../src/readings/operator/overrides.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { seeded } from '../../helpers/readings.js';

// Every kind of snapshot over fixed readings as of a fixed instant, and the SHA-256 of each of its files
// against the digests committed in golden.json: the same on every engine, and the same from one version
// to the next, until a change means them to differ. GOLDEN_WRITE=1 writes the digests this run makes
// (the first engine's; every other engine of the run is held to them).
const goldenPath = fileURLToPath(new URL('./golden.json', import.meta.url));
const rewrite = process.env.GOLDEN_WRITE === '1';
let writtenThisRun = false;

const minute = 60_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const pathOf = (url: string) => new URL(url).pathname;
const withoutComments = (text: string) => text.split('\n').filter((line) => !line.startsWith('#'));

// The fixed instants. The archive is versioned by when readings entered it (readings.recorded_at), and the
// settings a snapshot pins by when they were set: readings posted now are not there as of a past instant.
// The test posts through the API as a station would, then moves every such instant of its stations to
// these, before the snapshots' instant, as if it had all happened then.
const asOf = '2025-03-15T00:00:00.000Z';
const created = '2025-02-01T00:00:00Z';
const intervalSet = '2025-02-01T00:05:00Z';
const qcSet = '2025-03-13T00:00:00Z';
const recorded = '2025-03-14T00:00:00Z';
const removed = '2025-03-14T06:00:00Z';
const overridden = '2025-03-14T12:00:00Z';

type Station = { id: string; start: string; count: number; stepMinutes: number; gap?: [number, number] };
// Stations report every minute unless set otherwise; those every five are set so, for their coverage.
const stations: Station[] = [
  { id: 'gold-01', start: '2025-02-27T00:00:00Z', count: 4 * 1440, stepMinutes: 1 },
  { id: 'gold-02', start: '2025-02-27T06:00:00Z', count: 4 * 288, stepMinutes: 5 },
  // Three hours missing: the time-gap test fails the reading after them.
  { id: 'gold-03', start: '2025-02-28T12:00:00Z', count: 3 * 288, stepMinutes: 5, gap: [400, 436] },
];
const ids = stations.map((s) => s.id);

/** A double with 17 significant digits, as a station's firmware may well send it. */
const digits17 = (value: number) => Number(value.toPrecision(17));

/**
 * A station's readings, the same on every run (a fixed seed): daily cycles with noise, some nulls, spikes,
 * a flat stretch of hours, values past the plausibility bounds (suspect on ingest).
 */
function readingsOf(station: Station, seed: number): Record<string, unknown>[] {
  const random = seeded(seed);
  const t0 = Date.parse(station.start);
  const maybe = (value: number) => (random() < 0.05 ? null : digits17(value));
  const readings: Record<string, unknown>[] = [];
  for (let i = 0; i < station.count; i++) {
    if (station.gap && i >= station.gap[0] && i < station.gap[1]) continue;
    const ts = t0 + i * station.stepMinutes * minute;
    const phase = (2 * Math.PI * (ts % 86_400_000)) / 86_400_000;
    let temperature = 4 + 7 * Math.sin(phase) + (random() - 0.5) * 0.2;
    // Four flat hours on the second day: a stuck sensor.
    if (i * station.stepMinutes >= 1800 && i * station.stepMinutes < 2040) temperature = 7.123456789012345;
    if (i % 397 === 200) temperature += 12;
    if (i === 1000) temperature = 61.25;
    const humidity = i === 700 ? 100.5 : Math.min(100, 62 + 25 * Math.cos(phase) + (random() - 0.5) * 3);
    readings.push({
      timestamp: new Date(ts).toISOString(),
      temperature_c: maybe(temperature),
      humidity_rh: maybe(humidity),
      pressure_hpa: maybe(940 + 6 * Math.sin(phase / 3) + random() * 0.01),
      pm2_5: maybe(random() * 35 + (i % 503 === 11 ? 400 : 0)),
      pm10: maybe(random() * 60),
      co2_ppm: maybe(410 + random() * 40),
      uv_index: maybe(Math.max(0, 8 * Math.sin(phase - Math.PI / 2))),
      firmware_version: 'gold-1.4.2',
      module_data: { board: `b${i % 3}`, soil_temp: digits17(9 + random()) },
    });
  }
  return readings;
}

/** The snapshots kept, by name: a readings URL of every kind the snapshots take. */
const day = (date: string) => `from_date=${date}&to_date=${date}`;
const whole = 'from_date=2025-02-27&to_date=2025-03-03';
const aggregates: Record<string, string> = {
  'aggregate-hour': `station=gold-01&period=hour&${whole}`,
  'aggregate-day': `station=gold-01&period=day&${whole}`,
  'aggregate-week': `station=gold-02&period=week&${whole}`,
  'aggregate-month': `station=gold-03&period=month&${whole}`,
  // A range that cuts a week (from Monday 24 February) and a month (February).
  'aggregate-week-cut': 'station=gold-01&period=week&from_date=2025-02-28&to_date=2025-03-01',
  'aggregate-month-cut': 'station=gold-03&period=month&from_date=2025-03-01&to_date=2025-03-02',
  'aggregate-hour-zurich': `station=gold-01&period=hour&tz=Europe/Zurich&${day('2025-02-28')}`,
  'aggregate-day-zurich': `station=gold-02&period=day&tz=Europe/Zurich&${whole}`,
  // Half an hour off UTC: its hours cut UTC's.
  'aggregate-hour-kolkata': `station=gold-01&period=hour&tz=Asia/Kolkata&${day('2025-02-28')}`,
  'aggregate-day-kolkata': `station=gold-03&period=day&tz=Asia/Kolkata&${whole}`,
  'aggregate-percentiles': `station=gold-01&period=day&metrics=temperature_c,humidity_rh,pm2_5&percentiles=5,50,95&${whole}`,
  'aggregate-min-coverage': `station=gold-03&period=hour&min_coverage=90&${day('2025-03-01')}`,
  'aggregate-qc-pass': `station=gold-01&period=hour&metrics=temperature_c,humidity_rh,pm2_5&qc=pass&${day('2025-02-28')}`,
  'aggregate-quality': `station=gold-02&period=day&quality=ok&${whole}`,
};
const compares: Record<string, string> = {
  compare: `stations=${ids.join(',')}&param=temperature_c&hours=720`,
  'compare-zurich': `stations=${ids.join(',')}&param=humidity_rh&hours=500&tz=Europe/Zurich`,
  'compare-kolkata': 'stations=gold-01,gold-03&param=pm2_5&hours=400&tz=Asia/Kolkata',
};
const urls: Record<string, string> = {
  download: `/api/v1/data/download/?stations=${ids.join(',')}&columns=all&qc=true&${whole}`,
  'download-one': '/api/v1/data/download/?station=gold-02&quality=suspect',
  // Historical windows end at the snapshot's instant: 720 hours before it reach back past the first reading.
  historical: '/api/v1/data/historical/?station=gold-03&hours=720&qc=true',
  'historical-short': '/api/v1/data/historical/?station=gold-01&hours=336',
  ...Object.fromEntries(Object.entries(aggregates).map(([name, query]) => [name, `/api/v1/data/aggregate/?${query}`])),
  ...Object.fromEntries(Object.entries(compares).map(([name, query]) => [name, `/api/v1/data/compare/?${query}`])),
};

type SnapshotRecord = { as_of: string; formats: Record<'csv' | 'parquet', { url: string; sha256: string }> };

async function snapshotAt(env: TestEnv, url: string): Promise<{ record: SnapshotRecord; csv: Buffer; parquet: Buffer }> {
  const response = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url: `${url}&as_of=${asOf}` }) });
  const record = await response.json() as SnapshotRecord;
  assert.equal(response.status, 201, `${url}: ${JSON.stringify(record)}`);
  assert.equal(record.as_of, asOf);
  const file = async (format: 'csv' | 'parquet') => {
    const bytes = Buffer.from(await (await env.get(pathOf(record.formats[format].url))).arrayBuffer());
    assert.equal(sha256(bytes), record.formats[format].sha256, `${url} ${format}`);
    return bytes;
  };
  return { record, csv: await file('csv'), parquet: await file('parquet') };
}

/** Moves every instant the archive and the stations' settings keep of the test's stations to the fixed ones above. */
async function pinInstants(env: TestEnv): Promise<void> {
  await env.db.pool.transaction(async (tx) => {
    const of = sql.array(ids, 'text');
    await tx.query(sql.unsafe`update stations set created_at = ${created}, updated_at = ${created} where station_id = any(${of})`);
    // A station's first interval from its creation, the one set after it a little later.
    await tx.query(sql.unsafe`
      update station_intervals i set set_at = case when set_at = (select min(set_at) from station_intervals f where f.station_id = i.station_id)
        then ${created}::timestamptz else ${intervalSet}::timestamptz end
      where station_id = any(${of})`);
    await tx.query(sql.unsafe`update qc_configs set set_at = ${qcSet} where station_id = any(${of})`);
    await tx.query(sql.unsafe`update readings set recorded_at = ${recorded} where station_id = any(${of})`);
    await tx.query(sql.unsafe`update readings_removed set recorded_at = ${recorded}, removed_at = ${removed} where station_id = any(${of})`);
    await tx.query(sql.unsafe`update reading_removals set removed_at = ${removed} where station_id = any(${of})`);
    await tx.query(sql.unsafe`update reading_flags_replaced set recorded_at = ${recorded}, replaced_at = ${overridden} where station_id = any(${of})`);
    await tx.query(sql.unsafe`update quality_overrides set created_at = ${overridden} where station_id = any(${of})`);
  });
}

/**
 * Holds the digests made to those committed, naming each file that differs with both; with GOLDEN_WRITE=1,
 * the first engine of the run writes them instead.
 */
async function holdToGolden(digests: Record<string, string>): Promise<void> {
  if (rewrite && !writtenThisRun) {
    await writeFile(goldenPath, JSON.stringify(Object.fromEntries(Object.entries(digests).sort()), null, 2) + '\n');
    writtenThisRun = true;
    return;
  }
  const golden = JSON.parse(await readFile(goldenPath, 'utf8')) as Record<string, string>;
  const differing = [...new Set([...Object.keys(golden), ...Object.keys(digests)])].sort()
    .filter((file) => golden[file] !== digests[file])
    .map((file) => `${file}: committed ${golden[file] ?? 'none'}, made ${digests[file] ?? 'none'}`);
  assert.deepEqual(differing, [], `files that differ from golden.json (GOLDEN_WRITE=1 writes them when the change is meant):\n${differing.join('\n')}`);
}

describeEngines('snapshots of fixed readings as of a fixed instant', (env) => {
  before(async function () {
    this.timeout(120_000);
    for (const [index, station] of stations.entries()) {
      const key = await stationWithKey(env(), station.id);
      if (station.stepMinutes !== 1) {
        const add = await runCli(['stations', 'add', station.id, '--name', `Station ${station.id}`, '--location-name', 'Test site', '--altitude', '100', '--lat', '45', '--lon', '6', '--interval-seconds', String(station.stepMinutes * 60)], { DATABASE_URL: env().databaseUrl });
        assert.equal(add.code, 0, add.stderr);
      }
      const readings = readingsOf(station, 7919 * (index + 1));
      for (let i = 0; i < readings.length; i += 2000) {
        const posted = await postBatch(env(), key, { station_id: station.id, readings: readings.slice(i, i + 2000) });
        assert.equal(posted.status, 201, JSON.stringify(posted.body));
      }
    }
    // A station's own quality-control configuration, as an operator sets it.
    const file = path.join(tmpdir(), `envmon-golden-${process.pid}.json`);
    await writeFile(file, JSON.stringify({ streams: {
      temperature_c: { qartod: { gross_range_test: { fail_span: [-20, 30], suspect_span: [-10, 15] }, spike_test: { suspect_threshold: 2, fail_threshold: 6 }, flat_line_test: { suspect_threshold: 3600, fail_threshold: 7200, tolerance: 0.01 } } },
      humidity_rh: { qartod: { gross_range_test: { fail_span: [0, 100], suspect_span: [40, 95] } } },
    } }));
    const set = await runCli(['qc', 'set', 'gold-01', file, '--reason', 'golden'], { DATABASE_URL: env().databaseUrl });
    assert.equal(set.code, 0, set.stderr);
    await recordOverride(env().db, { stationId: 'gold-02', from: '2025-02-28T03:00:00Z', to: '2025-02-28T05:00:00Z', flag: 'invalid', reason: 'fan stopped' });
    await recordOverride(env().db, { stationId: 'gold-01', from: '2025-03-01T10:00:00Z', to: '2025-03-01T10:30:00Z', flag: 'suspect', reason: 'maintenance' });
    await deleteReadings(env().db, { stationId: 'gold-03', from: '2025-03-01T20:00:00Z', to: '2025-03-01T21:00:00Z', reason: 'test rig' });
    await pinInstants(env());
  });

  it('makes every kind of snapshot with the committed digests, and each aggregate\'s rows are those read as of its instant', async function () {
    this.timeout(240_000);
    const digests: Record<string, string> = {};
    const csvs: Record<string, Buffer> = {};
    for (const [name, url] of Object.entries(urls)) {
      const { record, csv, parquet } = await snapshotAt(env(), url);
      assert.ok(record.formats.csv.url.startsWith('http://envmon.test/api/v1/snapshots/'));
      digests[`${name}.csv`] = sha256(csv);
      digests[`${name}.parquet`] = sha256(parquet);
      csvs[name] = csv;
    }
    await holdToGolden(digests);

    // Live, as of the same instant, and the snapshot: the same header and rows.
    for (const [name, query] of Object.entries(aggregates)) {
      const kept = withoutComments(csvs[name]!.toString());
      const asOfAnswer = await env().get(`/api/v1/data/aggregate/?${query}&output=csv&as_of=${asOf}`);
      assert.equal(asOfAnswer.status, 200);
      assert.deepEqual(withoutComments(await asOfAnswer.text()), kept, `${name} as of ${asOf}`);
      // Nothing entered the archive after the instant: the live answer (from the rollups) is the same.
      const live = await env().get(`/api/v1/data/aggregate/?${query}&output=csv`);
      assert.deepEqual(withoutComments(await live.text()), kept, `${name} live`);
      assert.ok(kept.length > 2, `${name} has rows`);
    }
    for (const [name, query] of Object.entries(compares)) {
      const kept = withoutComments(csvs[name]!.toString()).filter((line) => line !== '');
      const { status, body } = await env().getJson(`/api/v1/data/compare/?${query}&as_of=${asOf}`);
      assert.equal(status, 200);
      const stationIds = Object.keys(body.series).sort();
      assert.deepEqual(kept, [
        `timestamp,${stationIds.join(',')}`,
        ...body.timestamps.map((t: string, i: number) => `${t},${stationIds.map((id) => body.series[id][i] ?? '').join(',')}`),
      ], `${name} as of ${asOf}`);
      assert.ok(kept.length > 2, `${name} has rows`);
    }
  });
});
