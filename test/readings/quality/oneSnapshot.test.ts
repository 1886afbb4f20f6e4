import assert from 'node:assert/strict';
import { setQcConfig, type QcConfig } from '../../../src/readings/core/qc/config.js';
import { aggregateFlags } from '../../../src/readings/core/qc/qartod.js';
import { runTests } from '../../../src/readings/core/qc/reference.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { admin } from '../../helpers/database.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';

const minute = 60_000;
const readings = 200_000;

const config: QcConfig = {
  streams: {
    temperature_c: { qartod: {
      spike_test: { suspect_threshold: 2, fail_threshold: 5 },
      rate_of_change_test: { threshold: 0.05, fail_threshold: 0.1 },
      flat_line_test: { suspect_threshold: 600, fail_threshold: 1800, tolerance: 0.01 },
      time_gap_test: { fail_span: 0.5 },
    } },
  },
};

/** The station's readings as SQL gives them, oldest first, and each one's flags from a run over the whole series. */
async function referenceFlags(env: TestEnv, station: string): Promise<Map<string, number>> {
  const rows = await admin(env.databaseUrl, async (client) => (await client.query<{ ms: number; t: number | null }>(
    `select extract(epoch from ts)::float8 * 1000 as ms, temperature_c as t from readings where station_id = $1 order by ts`, [station])).rows);
  const times = Float64Array.from(rows, (r) => r.ms);
  const values = Float64Array.from(rows, (r) => r.t ?? NaN);
  const flags = aggregateFlags(Object.values(runTests(config.streams.temperature_c!.qartod, values, times)), rows.length);
  return new Map(rows.map((r, i) => [new Date(r.ms).toISOString(), flags[i]!]));
}

// A flagged read takes one connection, and its rows and flags come from one snapshot: with a single
// download connection, no read waits for a second one; and a backfill committed while a download
// streams changes neither its rows nor its flags, which are those of the series when it began.
describeEngines('a flagged read on one connection, in one snapshot', (env) => {
  const station = 'qc-snap';
  let key = '';
  // Half a year of one-minute readings ending two days ago: far more than a socket buffers.
  const end = Math.floor((Date.now() - 2 * 86_400_000) / minute) * minute;
  const start = end - (readings - 1) * minute;

  before(async function () {
    this.timeout(120_000);
    key = await stationWithKey(env(), station);
    await setQcConfig(env().db.pool, station, config);
    await admin(env().databaseUrl, async (client) => {
      await client.query(`insert into readings (station_id, ts, temperature_c, humidity_rh, quality_flag, recorded_at)
        select $1, to_timestamp($2::float8 / 1000) + i * interval '1 minute',
               case when i % 997 = 5 then null else round((10 + 5 * sin(i / 300.0) + case when i % 4001 = 7 then 9 else 0 end)::numeric, 2) end, 50, 'ok', now()
        from generate_series(0, $3::int - 1) i`, [station, start, readings]);
    });
  });

  it('answers every flagged read whole with one download connection', async function () {
    this.timeout(240_000);
    const expected = await referenceFlags(env(), station);
    const csv = (await (await env().get(`/api/v1/data/download/?station=${station}&qc=true`)).text()).split('\n').filter((line) => /^\d{4}-/.test(line));
    assert.equal(csv.length, readings);
    for (const line of [csv[0]!, csv[1000]!, csv.at(-1)!]) assert.equal(Number(line.split(',')[8]), expected.get(line.split(',')[0]!), line);
    const parquet = await readParquet(new Uint8Array(await (await env().get(`/api/v1/data/download/?station=${station}&output=parquet&from_date=${new Date(end).toISOString().slice(0, 10)}`)).arrayBuffer()));
    assert.ok(parquet.rows.length > 0);
    const report = await env().getJson(`/api/v1/stations/${station}/quality/?from_date=${new Date(end - 30 * 86_400_000).toISOString().slice(0, 10)}&to_date=${new Date(end).toISOString().slice(0, 10)}`);
    assert.equal(report.status, 200);
    assert.ok(report.body.observed > 40_000);
  });

  it('streams the rows and flags of the series as it was when the download began, whatever commits meanwhile', async function () {
    this.timeout(240_000);
    const expected = await referenceFlags(env(), station);
    const response = await env().get(`/api/v1/data/download/?station=${station}&qc=true`, { headers: { 'Accept-Encoding': 'identity' } });
    assert.equal(response.status, 200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value, { stream: true });
    // A spike half a minute after a reading near the end: it changes its neighbours' spike and rate-of-change flags.
    const late = new Date(end - 10 * minute + 30_000).toISOString();
    const posted = await postBatch(env(), key, { station_id: station, readings: [{ timestamp: late, temperature_c: 80, humidity_rh: 50 }] });
    assert.equal(posted.status, 201);
    assert.equal(posted.body.accepted, 1);
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    const rows = text.split('\n').filter((line) => /^\d{4}-/.test(line)).map((line) => line.split(','));
    assert.equal(rows.length, readings, 'the rows of the series when the download began');
    assert.ok(!rows.some((fields) => fields[0] === late), 'the reading committed later');
    const differing = rows.filter((fields) => Number(fields[8]) !== expected.get(fields[0]!));
    assert.deepEqual(differing.slice(0, 5).map((fields) => fields.join(',')), [], `${differing.length} rows flagged otherwise than the series they belong to`);
    // The next download sees the backfill, and its neighbours flagged by it.
    const after = (await (await env().get(`/api/v1/data/download/?station=${station}&qc=true&from_date=${late.slice(0, 10)}`)).text()).split('\n').filter((line) => line.startsWith(late));
    assert.equal(after.length, 1);
    assert.equal(Number(after[0]!.split(',')[8]), 4);
  });
}, { STREAM_POOL_SIZE: '1' });
