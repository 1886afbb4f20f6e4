import assert from 'node:assert/strict';
import { setQcConfig, type QcConfig } from '../../../src/readings/core/qc/config.js';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { between, csvRows } from '../../helpers/archiveLog.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';
import { seeded } from '../../helpers/readings.js';

const minute = 60_000;
const day = 86_400_000;

/** The configuration the hand-made series is flagged under (a 30-minute time gap, flat lines of 4 and 8 minutes). */
export const handConfig: QcConfig = {
  streams: {
    temperature_c: { qartod: {
      gross_range_test: { fail_span: [-10, 40], suspect_span: [0, 30] },
      spike_test: { suspect_threshold: 2, fail_threshold: 5 },
      rate_of_change_test: { threshold: 0.05, fail_threshold: 0.1 },
      flat_line_test: { suspect_threshold: 240, fail_threshold: 480, tolerance: 0.01 },
      time_gap_test: { fail_span: 0.5 },
    } },
  },
};

// A series whose flags are unambiguous, with each test's flags worked out by hand from ioos_qc's
// definitions: a spike at 5, a jump at 23, a plateau of 13.5 from 8 to 20, a missing value at 21, a
// 36-minute gap before 25, and the series' ends. Minutes after the start, and temperatures.
const handMinutes = [...Array.from({ length: 25 }, (_, i) => i), 60, 61];
const handValues = [10, 10.5, 11, 11.5, 12, 20, 12.5, 13, ...Array(13).fill(13.5), null, 14, 35, 14.5, 15, 15.2];
const handFlags = {
  gross_range_test: [...Array(21).fill(1), 9, 1, 3, 1, 1, 1],
  spike_test: [2, 1, 1, 1, 3, 4, 3, 1, 1, ...Array(11).fill(1), 2, 9, 2, 4, 4, 1, 2],
  rate_of_change_test: [1, 1, 1, 1, 1, 4, 4, 1, 1, ...Array(12).fill(1), 9, 1, 4, 4, 1, 1],
  flat_line_test: [...Array(12).fill(1), 3, 3, 3, 3, 4, 4, 4, 4, 4, 9, 1, 1, 1, 1, 1],
  time_gap_test: [...Array(25).fill(1), 4, 1],
};
// Missing at 21 aggregates to the time gap's pass, as ioos_qc's qartod_compare ranks them.
const handAggregate = [1, 1, 1, 1, 3, 4, 4, 1, 1, 1, 1, 1, 3, 3, 3, 3, 4, 4, 4, 4, 4, 1, 1, 4, 4, 4, 1];

/** Posts readings in batches in a seeded random order, as a station back from an outage re-sends them. */
async function postShuffled(env: TestEnv, key: string, station: string, readings: { ts: number; temperature_c: number | null }[], seed: number) {
  const random = seeded(seed);
  const batches: typeof readings[] = [];
  for (let i = 0; i < readings.length;) {
    const size = 1 + Math.floor(random() * 6);
    batches.push(readings.slice(i, i + size));
    i += size;
  }
  batches.sort(() => random() - 0.5);
  for (const batch of batches) {
    const { status, body } = await postBatch(env, key, {
      station_id: station,
      readings: batch.map((r) => ({ timestamp: new Date(r.ts).toISOString(), temperature_c: r.temperature_c, humidity_rh: 50 })),
    });
    assert.equal(status, 201, JSON.stringify(body));
  }
}

/** Each CSV row's timestamp and the value of `column`, from a download's text. */
function csvColumn(text: string, column: string): Map<string, string> {
  const header = text.split('\n').find((line) => line.startsWith('timestamp_utc') || line.startsWith('station_id'))!.split(',');
  const at = header.indexOf(column);
  assert.ok(at >= 0, `no column ${column} in ${header.join(',')}`);
  return new Map(csvRows(text).map((line) => [line.split(',')[0]!, line.split(',')[at]!]));
}

describeEngines('QARTOD flags on readings', (env) => {
  const station = 'qc-hand';
  // Half an hour before a UTC midnight, days back: the series crosses the day.
  const start = Math.floor((Date.now() - 5 * day) / day) * day - 30 * minute;
  const series = handMinutes.map((m, i) => ({ ts: start + m * minute, temperature_c: handValues[i] ?? null }));
  const iso = (i: number) => new Date(series[i]!.ts).toISOString();
  let key = '';
  let beforeDeletion = '';

  before(async function () {
    this.timeout(60_000);
    key = await stationWithKey(env(), station);
    await setQcConfig(env().db.pool, station, handConfig);
    await postShuffled(env(), key, station, series, 7);
  });

  it('gives each test\'s flag and the aggregate with the historical readings (qc=true), whatever order they came in', async () => {
    const { status, body } = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&qc=true`);
    assert.equal(status, 200);
    assert.equal(body.readings.length, series.length);
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    body.readings.forEach((reading: any, i: number) => {
      assert.equal(reading.timestamp, iso(i));
      assert.equal(reading.temperature_c_qc, handAggregate[i], `aggregate at ${i}`);
      for (const [test, expected] of Object.entries(handFlags)) assert.equal(reading.qc.temperature_c[test], expected[i], `${test} at ${i}`);
      // A metric without tests is not evaluated.
      assert.equal(reading.humidity_rh_qc, 2);
      assert.equal(reading.qc.humidity_rh, undefined);
    });
    // Without qc=true, the readings are as they were.
    const plain = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720`);
    assert.equal(plain.body.readings[0].temperature_c_qc, undefined);
    assert.equal(plain.body.readings[0].qc, undefined);
  });

  it('gives the aggregate flags after the CSV\'s columns, also for a download of one day of the series', async () => {
    const whole = await env().get(`/api/v1/data/download/?station=${station}&qc=true`);
    assert.equal(whole.status, 200);
    const text = await whole.text();
    const header = text.split('\n').find((line) => line.startsWith('timestamp_utc'))!;
    assert.equal(header, 'timestamp_utc,temperature_c,humidity_rh,pressure_hpa,pm2_5_ugm3,pm10_ugm3,co2_ppm,quality_flag,temperature_c_qc,humidity_rh_qc,pressure_hpa_qc,pm2_5_ugm3_qc,pm10_ugm3_qc,co2_ppm_qc');
    const flags = csvColumn(text, 'temperature_c_qc');
    assert.deepEqual([...flags.values()].map(Number), handAggregate);
    // Each day alone: a reading's neighbours across midnight still count.
    const firstDay = new Date(start).toISOString().slice(0, 10);
    const secondDay = new Date(start + day).toISOString().slice(0, 10);
    for (const date of [firstDay, secondDay]) {
      const part = csvColumn(await (await env().get(`/api/v1/data/download/?station=${station}&qc=true&from_date=${date}&to_date=${date}`)).text(), 'temperature_c_qc');
      assert.ok(part.size > 0);
      for (const [ts, flag] of part) assert.equal(flag, flags.get(ts), `${ts} in the download of ${date}`);
    }
    // With every column, the other metrics' flags follow; without qc=true, none.
    const all = await (await env().get(`/api/v1/data/download/?station=${station}&qc=true&columns=all`)).text();
    assert.match(all, /module_data,temperature_c_qc,humidity_rh_qc,pressure_hpa_qc,pm2_5_ugm3_qc,pm10_ugm3_qc,co2_ppm_qc,altitude_m_qc,pm1_0_qc,co_ppm_qc,uv_index_qc\n/);
    const plain = await (await env().get(`/api/v1/data/download/?station=${station}`)).text();
    assert.doesNotMatch(plain, /_qc/);
  });

  it('always gives the flags in a Parquet download, as integers', async () => {
    const response = await env().get(`/api/v1/data/download/?station=${station}&output=parquet`);
    assert.equal(response.status, 200);
    const file = await readParquet(new Uint8Array(await response.arrayBuffer()));
    const at = file.columns.indexOf('temperature_c_qc');
    assert.ok(at > file.columns.indexOf('module_data'));
    assert.equal(file.schema.find((c) => c.name === 'temperature_c_qc')!.type, 'INT32');
    assert.deepEqual(file.rows.map((row) => Number(row[at])), handAggregate);
  });

  it('publishes the configuration in ioos_qc\'s format, the defaults for a station without its own', async () => {
    const own = await env().getJson(`/api/v1/stations/${station}/qc/`);
    assert.equal(own.status, 200);
    assert.equal(own.headers.get('x-qc-config'), 'station');
    assert.deepEqual(own.body, handConfig);
    await stationWithKey(env(), 'qc-default');
    const defaults = await env().getJson('/api/v1/stations/qc-default/qc/');
    assert.equal(defaults.headers.get('x-qc-config'), 'default');
    assert.deepEqual(Object.keys(defaults.body.streams), ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5_ugm3', 'pm10_ugm3', 'co2_ppm']);
    for (const stream of Object.values(defaults.body.streams) as { qartod: Record<string, unknown> }[]) {
      assert.deepEqual(Object.keys(stream.qartod), ['gross_range_test', 'spike_test', 'rate_of_change_test', 'flat_line_test', 'time_gap_test']);
    }
    assert.equal((await env().getJson('/api/v1/stations/nowhere/qc/')).status, 404);
  });

  it('flags again the readings whose neighbours a deletion changed, and keeps the earlier flags as of before it', async () => {
    beforeDeletion = await between();
    // The spike goes: its neighbours are no longer beside it.
    await deleteReadings(env().db, { stationId: station, from: iso(5), to: iso(5), reason: 'test' });
    const { body } = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&qc=true`);
    const spikes = body.readings.map((r: { qc: { temperature_c: { spike_test: number } } }) => r.qc.temperature_c.spike_test);
    // 4 is now between 11.5 and 12.5, 6 between 12 and 13: neither a spike.
    assert.deepEqual(spikes.slice(0, 8), [2, 1, 1, 1, 1, 1, 1, 1]);
    const rates = body.readings.map((r: { qc: { temperature_c: { rate_of_change_test: number } } }) => r.qc.temperature_c.rate_of_change_test);
    assert.deepEqual(rates.slice(0, 7), [1, 1, 1, 1, 1, 1, 1]);
    const then = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&qc=true&as_of=${beforeDeletion}`);
    assert.deepEqual(then.body.readings.map((r: { temperature_c_qc: number }) => r.temperature_c_qc), handAggregate);
  });

  it('flags by the configuration in force at as_of', async () => {
    const before = await between();
    // Without the spike test, the spike's jump is still a rate of change.
    const others = { ...handConfig.streams.temperature_c!.qartod };
    delete others.spike_test;
    await setQcConfig(env().db.pool, station, { streams: { temperature_c: { qartod: others } } });
    const now = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&qc=true`);
    assert.equal(now.body.readings[0].qc.temperature_c.spike_test, undefined);
    const then = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=720&qc=true&as_of=${before}`);
    assert.equal(then.body.readings[0].qc.temperature_c.spike_test, 2);
    await setQcConfig(env().db.pool, station, handConfig);
  });

  it('refuses a qc value that is not true or false, naming it', async () => {
    const { status, body } = await env().getJson(`/api/v1/data/download/?station=${station}&qc=yes`);
    assert.equal(status, 400);
    assert.match(JSON.stringify(body), /qc/);
  });
});
