import assert from 'node:assert/strict';
import { setQcConfig, type QcConfig } from '../../../src/readings/core/qc/config.js';
import { runTests, StationQcCursor } from '../../../src/readings/core/qc/flags.js';
import { aggregateFlags } from '../../../src/readings/core/qc/qartod.js';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
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
    const check = async (step: string) => {
      const expected = fromScratch([...held.values()].sort((a, b) => a.ts - b.ts));
      const download = await (await env().get(`/api/v1/data/download/?station=${station}&qc=true`)).text();
      const lines = download.split('\n').filter((line) => /^\d{4}-/.test(line));
      assert.equal(lines.length, expected.size, `${step}: readings`);
      for (const line of lines) {
        const fields = line.split(',');
        assert.deepEqual([Number(fields[8]), Number(fields[9])], expected.get(fields[0]!), `${step}: ${fields[0]} (QC_SEED=${seed})`);
      }
      // Read window by window, windows of a few readings give the same flags.
      const windowed = new StationQcCursor(env().db.streamPool, station, config, {}, undefined, { windowSize: 2 + Math.floor(random() * 20), readAhead: random() < 0.5 ? { interval: 1 + Math.floor(random() * 120) } : undefined });
      const streams = [0, 1];
      let seen = 0;
      for await (const window of windowed.windows()) {
        seen += window.times.length;
        window.times.forEach((t, i) => {
          assert.deepEqual(streams.map((s) => window.streams[s]!.aggregate[i]), expected.get(new Date(t).toISOString()), `${step}: windowed at ${new Date(t).toISOString()} (QC_SEED=${seed})`);
        });
      }
      assert.equal(seen, expected.size, `${step}: readings read window by window`);
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
