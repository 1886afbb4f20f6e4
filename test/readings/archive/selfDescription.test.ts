import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';

const minute = 60_000;
const day = 86_400_000;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function snapshot(env: TestEnv, url: string): Promise<any> {
  const response = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
  assert.equal(response.status, 201, url);
  return response.json();
}

const pathOf = (url: string) => new URL(url).pathname;
const bytesOf = async (env: TestEnv, path: string) => Buffer.from(await (await env.get(path)).arrayBuffer());

/** A CSV file's `# ` comment lines, and its header row and rows. */
function split(text: string): { comments: string[]; rows: string[] } {
  const lines = text.split('\n').filter((line) => line !== '');
  return { comments: lines.filter((l) => l.startsWith('# ')), rows: lines.filter((l) => !l.startsWith('# ')) };
}

/** A snapshot's CSV, split, and its Parquet file as DuckDB reads it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function filesOf(env: TestEnv, record: any) {
  const csv = split((await bytesOf(env, pathOf(record.formats.csv.url))).toString());
  const parquet = await readParquet(new Uint8Array(await bytesOf(env, pathOf(record.formats.parquet.url))));
  return { csv, parquet };
}

const withoutCitation = (lines: string[]) => lines.filter((l) => !l.startsWith('# Cite as: '));
const metadataWithoutCitation = (metadata: Record<string, string>) => Object.entries(metadata).filter(([key]) => key !== 'citation');

describeEngines('what a snapshot says of itself', (env) => {
  const station = 'self-01';
  const other = 'self-02';
  const base = Math.floor((Date.now() - 10 * day) / day) * day;
  const dayOf = (offset: number) => new Date(base + offset * day).toISOString().slice(0, 10);
  // Every ten minutes for three days: buckets of Zurich's hours hold six readings each.
  const readings = (offset: number) => Array.from({ length: 3 * 144 }, (_, i) => ({
    timestamp: new Date(base + i * 10 * minute).toISOString(), temperature_c: offset + (i % 37) / 4, humidity_rh: 40 + (i % 11),
  }));

  before(async () => {
    for (const [id, offset] of [[station, 3], [other, 9]] as const) {
      const key = await stationWithKey(env(), id);
      assert.equal((await postBatch(env(), key, { station_id: id, readings: readings(offset) })).status, 201);
    }
  });

  it('names a tz aggregate\'s zone, percentiles, completeness threshold, quality, qc and dates in its comment lines, metadata and citation', async () => {
    const query = `station=${station}&period=hour&tz=Europe/Zurich&percentiles=90,10&min_coverage=50&quality=ok&qc=pass&from_date=${dayOf(1)}&to_date=${dayOf(2)}`;
    const record = await snapshot(env(), `/api/v1/data/aggregate/?${query}`);
    const { csv, parquet } = await filesOf(env(), record);
    assert.deepEqual(csv.comments.slice(2), [
      `# As of ${record.as_of}: the archive as it stood then.`,
      '# Timestamps are Europe/Zurich time, with its UTC offset. Empty fields are missing values.',
      '# Parameters: period=hour, quality=ok, qc=pass, percentiles=10,90, min_coverage=50',
      `# Covers: from ${dayOf(1)} to ${dayOf(2)} (Europe/Zurich dates).`,
    ]);
    // The rows are the zone's hours, with its offset.
    assert.ok(csv.rows.length > 40);
    for (const row of csv.rows.slice(1)) assert.match(row.split(',')[0]!, /T\d\d:00:00\+0[12]:00$/);
    assert.match(record.citation, /hourly aggregates \(Europe\/Zurich time\) of readings of station self-01 from \S+ to \S+, as of /);
    assert.equal(csv.comments[1], `# Cite as: ${record.citation}`);
    const { citation, ...metadata } = parquet.metadata;
    assert.equal(citation, record.citation);
    assert.deepEqual(metadata, {
      license: 'https://creativecommons.org/licenses/by/4.0/', timezone: 'UTC', buckets_time_zone: 'Europe/Zurich',
      period: 'hour', quality: 'ok', qc: 'pass', percentiles: '10,90', min_coverage: '50',
      covers: `from ${dayOf(1)} to ${dayOf(2)} (Europe/Zurich dates)`, as_of: record.as_of, snapshot: record.url,
    });
  });

  it('names a compare\'s zone and window', async () => {
    const record = await snapshot(env(), `/api/v1/data/compare/?stations=${other},${station}&hours=720&param=humidity_rh&tz=Asia/Kolkata`);
    const { csv, parquet } = await filesOf(env(), record);
    assert.deepEqual(csv.comments.slice(2), [
      `# As of ${record.as_of}: the archive as it stood then.`,
      '# Timestamps are Asia/Kolkata time, with its UTC offset. Empty fields are missing values.',
      '# Parameters: param=humidity_rh, hours=720, interval_seconds=3600',
      `# Covers: the 720 hours before ${record.as_of}, in buckets of 3600 s.`,
    ]);
    assert.equal(csv.rows[0], `timestamp,${station},${other}`);
    for (const row of csv.rows.slice(1)) assert.match(row.split(',')[0]!, /T\d\d:00:00\+05:30$/);
    assert.match(record.citation, /humidity_rh \(Asia\/Kolkata time\) of stations self-01, self-02 in the 720 hours/);
    assert.equal(parquet.metadata.buckets_time_zone, 'Asia/Kolkata');
    assert.equal(parquet.metadata.hours, '720');
    assert.equal(parquet.metadata.citation, record.citation);
  });

  it('says which readings a download without dates covers, and its qc, never "full history"', async () => {
    const record = await snapshot(env(), `/api/v1/data/download/?station=${station}&qc=true`);
    const { csv, parquet } = await filesOf(env(), record);
    assert.deepEqual(csv.comments.slice(2), [
      `# As of ${record.as_of}: the archive as it stood then.`,
      '# Timestamps are UTC. Empty fields are missing values.',
      '# Parameters: columns=default, qc=true',
      `# Covers: all readings up to ${record.as_of}.`,
    ]);
    assert.match(csv.rows[0]!, /,temperature_c_qc(,|$)/);
    assert.equal(csv.rows.length - 1, 3 * 144);
    assert.ok(record.citation.includes(`readings of station ${station} up to ${record.as_of}`), record.citation);
    assert.ok(!record.citation.includes('full history'), record.citation);
    assert.equal(parquet.metadata.qc, 'true');
    assert.equal(parquet.metadata.covers, `all readings up to ${record.as_of}`);
    assert.equal(parquet.metadata.buckets_time_zone, undefined);
  });

  it('gives, for every endpoint, the live answer\'s header row and rows as of its instant, and says at least what that answer says', async () => {
    const cases = [
      `/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(1)}&quality=ok&qc=true`,
      `/api/v1/data/download/?stations=${station},${other}&columns=all`,
      `/api/v1/data/aggregate/?station=${station}&period=day&tz=America/St_Johns&percentiles=50&min_coverage=10`,
      `/api/v1/data/aggregate/?station=${station}&period=hour&metrics=humidity_rh&from_date=${dayOf(1)}`,
    ];
    for (const url of cases) {
      const record = await snapshot(env(), url);
      const { csv, parquet } = await filesOf(env(), record);
      const live = await env().get(`${url}&output=csv&as_of=${record.as_of}`);
      assert.equal(live.status, 200, url);
      const answer = split(await live.text());
      assert.deepEqual(csv.rows, answer.rows, url);
      for (const line of withoutCitation(answer.comments)) assert.ok(csv.comments.includes(line), `${url}: ${line}`);
      // The live citation names the query asked, less output, and the snapshot's the same data.
      assert.ok(live.headers.get('x-attribution')!.endsWith(`${url.split('?')[0]}?${url.split('?')[1]}&as_of=${record.as_of}. Licensed CC BY 4.0.`), live.headers.get('x-attribution')!);
      const liveParquet = await readParquet(new Uint8Array(await bytesOf(env(), `${url}&output=parquet&as_of=${record.as_of}`)));
      assert.deepEqual(parquet.rows, liveParquet.rows, url);
      for (const [key, value] of metadataWithoutCitation(liveParquet.metadata)) assert.equal(parquet.metadata[key], value, `${url}: ${key}`);
    }
    // compare and historical answer JSON live: the snapshot's rows are its values.
    const compare = await snapshot(env(), `/api/v1/data/compare/?stations=${station}&hours=240&param=temperature_c&tz=Europe/Zurich`);
    const compared = await env().getJson(`/api/v1/data/compare/?stations=${station}&hours=240&param=temperature_c&tz=Europe/Zurich&as_of=${compare.as_of}`);
    assert.equal(compared.body.tz, 'Europe/Zurich');
    assert.deepEqual((await filesOf(env(), compare)).csv.rows.slice(1), compared.body.timestamps.map((t: string, i: number) => `${t},${compared.body.series[station][i] ?? ''}`));
    const historical = await snapshot(env(), `/api/v1/data/historical/?station=${station}&hours=720&quality=ok`);
    const held = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&quality=ok&as_of=${historical.as_of}`);
    const files = await filesOf(env(), historical);
    assert.deepEqual(files.csv.rows.slice(1).map((r) => r.split(',')[0]), held.body.readings.map((r: { timestamp: string }) => r.timestamp));
    assert.ok(files.csv.comments.includes('# Parameters: hours=720, quality=ok'));
    assert.ok(files.csv.comments.includes(`# Covers: the 720 hours before ${historical.as_of}.`));
  });

  it('keeps the comment lines and metadata a snapshot was made with', async () => {
    const record = await snapshot(env(), `/api/v1/data/aggregate/?station=${station}&period=day&tz=Europe/Zurich`);
    // As a snapshot made by an earlier version recorded them, before files were stored: its files are made
    // again with them on the first request, and the same query over the same result finds it.
    const comments = '# Data licensed under CC BY 4.0\n# Cite as: an earlier citation\n# As of then. Timestamps are UTC. Empty fields are missing values.\n';
    const metadata = [['license', 'x'], ['citation', 'an earlier citation'], ['timezone', 'UTC']];
    // The header row and rows from the live answer as of its instant: the snapshot's file is not asked for before.
    const live = await (await env().get(`/api/v1/data/aggregate/?station=${station}&period=day&tz=Europe/Zurich&output=csv&as_of=${record.as_of}`)).text();
    const csv = Buffer.from(comments + live.split('\n').filter((l) => !l.startsWith('# ')).join('\n'));
    await env().db.pool.query(sql.type(z.object({}))`
      update snapshots set pinned = pinned || ${sql.jsonb({ comments, metadata })},
        files = jsonb_set(files, '{csv}', ${sql.jsonb({ bytes: csv.length, rows: record.formats.csv.rows, sha256: createHash('sha256').update(csv).digest('hex') })})
      where id = ${record.id}`);
    await env().db.pool.query(sql.type(z.object({}))`delete from snapshot_chunks where snapshot_id = ${record.id}`);
    const again = await env().get(`${pathOf(record.url)}data.csv`);
    assert.equal(again.status, 200);
    assert.deepEqual(Buffer.from(await again.arrayBuffer()), csv);
    assert.equal((await snapshot(env(), `/api/v1/data/aggregate/?station=${station}&period=day&tz=Europe/Zurich`)).citation, 'an earlier citation');
  });
});
