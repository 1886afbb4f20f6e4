import assert from 'node:assert/strict';
import { setQcConfig, type QcConfig } from '../../../src/readings/core/qc/config.js';
import { aggregateFlags } from '../../../src/readings/core/qc/qartod.js';
import { runTests } from '../../../src/readings/core/qc/reference.js';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';
import { seeded } from '../../helpers/readings.js';

const minute = 60_000;
const seed = Number(process.env.QC_SEED ?? Math.floor(Math.random() * 2 ** 31));

const config: QcConfig = {
  streams: {
    temperature_c: { qartod: {
      gross_range_test: { fail_span: [-20, 40], suspect_span: [-5, 30] },
      spike_test: { suspect_threshold: 1.5, fail_threshold: 4 },
      rate_of_change_test: { threshold: 0.04, fail_threshold: 0.09 },
      flat_line_test: { suspect_threshold: 180, fail_threshold: 420, tolerance: 0.3 },
      time_gap_test: { fail_span: 0.25 },
    } },
    humidity_rh: { qartod: {
      spike_test: { suspect_threshold: 6 },
      flat_line_test: { suspect_threshold: 240, fail_threshold: 600, tolerance: 0.5 },
    } },
  },
};

type Reading = { ts: number; temperature_c: number | null; humidity_rh: number | null };

/** A series with plateaus, spikes, missing values and gaps, one reading a minute where there is one. */
function makeSeries(random: () => number, start: number, count: number): Reading[] {
  const series: Reading[] = [];
  let t = start;
  let temperature = 10;
  let humidity = 60;
  let flat = 0;
  for (let i = 0; i < count; i++) {
    t += random() < 0.05 ? Math.floor(5 + random() * 25) * minute : minute;
    if (flat > 0) flat--;
    else if (random() < 0.04) flat = Math.floor(3 + random() * 12);
    else {
      temperature = Math.round((temperature + (random() - 0.5) * 3) * 100) / 100;
      humidity = Math.round((humidity + (random() - 0.5) * 4) * 10) / 10;
    }
    const spike = random() < 0.04 ? (random() - 0.5) * 30 : 0;
    series.push({
      ts: t,
      temperature_c: random() < 0.05 ? null : Math.round((temperature + spike) * 100) / 100,
      humidity_rh: random() < 0.05 ? null : humidity,
    });
  }
  return series;
}

/** Whether a reading is flagged ok on ingest: the plausibility bounds of the API (inclusive) on the fields posted. */
const plausible = (r: Reading) => (r.temperature_c === null || (r.temperature_c >= -50 && r.temperature_c <= 60)) && (r.humidity_rh === null || (r.humidity_rh >= 0 && r.humidity_rh <= 100));

/** Each reading's aggregate flags, by ISO timestamp, as a from-scratch run over the whole series gives them. */
function fromScratch(held: Reading[]): Map<string, [number, number]> {
  const times = Float64Array.from(held, (r) => r.ts);
  const flagsOf = (field: 'temperature_c' | 'humidity_rh') => {
    const values = Float64Array.from(held, (r) => r[field] ?? NaN);
    const tests = Object.values(runTests(config.streams[field]!.qartod, values, times));
    return aggregateFlags(tests, held.length);
  };
  const temperature = flagsOf('temperature_c');
  const humidity = flagsOf('humidity_rh');
  return new Map(held.map((r, i) => [new Date(r.ts).toISOString(), [temperature[i]!, humidity[i]!]]));
}

describeEngines(`QARTOD flags against a from-scratch run, batches in any order, backfills and deletions (QC_SEED=${seed})`, (env) => {
  const station = 'qc-prop';
  const other = 'qc-other';

  it('agrees on every reading of every read after every step', async function () {
    this.timeout(120_000);
    console.log(`      QC_SEED=${seed}`);
    const random = seeded(seed);
    const key = await stationWithKey(env(), station);
    await setQcConfig(env().db.pool, station, config);
    // Ending an hour ago, so that windows of the last hours cut the series.
    const series = makeSeries(random, Date.now() - 7 * 60 * minute, 300);
    const shift = series.at(-1)!.ts - (Date.now() - 60 * minute);
    for (const r of series) r.ts -= Math.max(shift, 0);
    const held = new Map<number, Reading>();
    const post = async (readings: Reading[]) => {
      const { status, body } = await postBatch(env(), key, {
        station_id: station,
        readings: readings.map((r) => ({ timestamp: new Date(r.ts).toISOString(), temperature_c: r.temperature_c, humidity_rh: r.humidity_rh })),
      });
      assert.equal(status, 201, JSON.stringify(body));
      for (const r of readings) held.set(r.ts, r);
    };
    // Another station, whose readings interleave with this one's in a download of both.
    const otherKey = await stationWithKey(env(), other);
    const others = makeSeries(random, series[0]!.ts - 5 * minute, 200);
    const { status } = await postBatch(env(), otherKey, {
      station_id: other, readings: others.map((r) => ({ timestamp: new Date(r.ts).toISOString(), temperature_c: r.temperature_c, humidity_rh: r.humidity_rh })),
    });
    assert.equal(status, 201);
    const check = async (step: string) => {
      const ordered = [...held.values()].sort((a, b) => a.ts - b.ts);
      const expected = fromScratch(ordered);
      const rowsOf = async (url: string) => (await (await env().get(url)).text()).split('\n').filter((line) => /^(qc-|\d{4}-)/.test(line)).map((line) => line.split(','));
      // One station's CSV; both stations' (each row then carries its successor); only the readings flagged ok.
      const reads = [
        { what: 'CSV', url: `/api/v1/data/download/?station=${station}&qc=true`, at: 0, flags: [8, 9], want: ordered },
        { what: 'CSV of two stations', url: `/api/v1/data/download/?stations=${station},${other}&qc=true`, at: 1, flags: [9, 10], want: ordered },
        { what: 'CSV of the readings flagged ok', url: `/api/v1/data/download/?station=${station}&qc=true&quality=ok`, at: 0, flags: [8, 9], want: ordered.filter(plausible) },
      ];
      for (const read of reads) {
        const rows = (await rowsOf(read.url)).filter((fields) => read.at === 0 || fields[0] === station);
        assert.deepEqual(rows.map((fields) => fields[read.at]), read.want.map((r) => new Date(r.ts).toISOString()), `${step}: ${read.what}: readings`);
        for (const fields of rows) {
          assert.deepEqual(read.flags.map((f) => Number(fields[f])), expected.get(fields[read.at]!), `${step}: ${read.what}: ${fields[read.at]} (QC_SEED=${seed})`);
        }
      }
      const parquet = await readParquet(new Uint8Array(await (await env().get(`/api/v1/data/download/?station=${station}&output=parquet`)).arrayBuffer()));
      const [time, temperature, humidity] = ['timestamp_utc', 'temperature_c_qc', 'humidity_rh_qc'].map((c) => parquet.columns.indexOf(c));
      assert.equal(parquet.rows.length, expected.size, `${step}: Parquet readings`);
      for (const row of parquet.rows) {
        const at = new Date(Number(row[time!] as bigint) / 1000).toISOString();
        assert.deepEqual([Number(row[temperature!]), Number(row[humidity!])], expected.get(at), `${step}: Parquet ${at} (QC_SEED=${seed})`);
      }
      for (const hours of [1 + Math.floor(random() * 3), 4 + Math.floor(random() * 4)]) {
        const { body } = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=${hours}&qc=true`);
        for (const r of body.readings as { timestamp: string; temperature_c_qc: number; humidity_rh_qc: number }[]) {
          assert.deepEqual([r.temperature_c_qc, r.humidity_rh_qc], expected.get(r.timestamp), `${step}: ${r.timestamp} in the last ${hours} hours (QC_SEED=${seed})`);
        }
      }
    };

    // The series in batches of 1 to 40 readings, in a random order, some sent twice.
    const batches: Reading[][] = [];
    for (let i = 0; i < series.length;) {
      const size = 1 + Math.floor(random() * 40);
      batches.push(series.slice(i, i + size));
      i += size;
    }
    batches.sort(() => random() - 0.5);
    for (const [n, batch] of batches.entries()) {
      await post(batch);
      if (random() < 0.15) await post(batch);
      if (n % 4 === 3) await check(`after ${n + 1} batches`);
    }
    await check('all posted');
    // Deletions of random ranges, then some of them posted again (a backfill).
    for (let round = 0; round < 3; round++) {
      const first = Math.floor(random() * (series.length - 20));
      const last = first + Math.floor(random() * 20);
      await deleteReadings(env().db, { stationId: station, from: new Date(series[first]!.ts).toISOString(), to: new Date(series[last]!.ts).toISOString(), reason: 'test' });
      for (let i = first; i <= last; i++) held.delete(series[i]!.ts);
      await check(`deletion ${round + 1}`);
      const again = series.slice(first, last + 1).filter(() => random() < 0.6);
      if (again.length > 0 && random() < 0.7) {
        await post(again);
        await check(`backfill ${round + 1}`);
      }
    }
  });
});
