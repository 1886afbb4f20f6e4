import assert from 'node:assert/strict';
import { readInOneSnapshot } from '../../../src/db/oneSnapshot.js';
import { SeriesSpacings, wholeSeriesFacts, wholeSeriesSpacings } from '../../../src/readings/core/qc/spacings.js';
import { deleteReadings } from '../../../src/readings/operator/removal.js';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { seeded } from '../../helpers/readings.js';

const seed = Number(process.env.SPACINGS_SEED ?? Math.floor(Math.random() * 2 ** 31));

// The series facts kept between reads (the spacings before a station's settled day, counted once per
// mark) against the same facts counted from the whole series, after every kind of write: live batches,
// batches reaching back days, re-sent batches, deletions.
describeEngines(`the series facts kept between reads, against the whole series counted (SPACINGS_SEED=${seed})`, (env) => {
  it('are those of the whole series after every write', async function () {
    this.timeout(120_000);
    console.log(`      SPACINGS_SEED=${seed}`);
    const random = seeded(seed);
    const station = 'qc-spacings';
    const key = await stationWithKey(env(), station);
    const kept = new SeriesSpacings();
    // Four days of readings 30 s to 2 min apart, so that the median moves as they arrive.
    const times: number[] = [];
    for (let t = Date.now() - 4 * 86_400_000; t < Date.now() - 60_000; t += [30_000, 60_000, 60_000, 90_000, 120_000][Math.floor(random() * 5)]!) times.push(t);
    const batches: number[][] = [];
    for (let i = 0; i < times.length;) {
      const size = 1 + Math.floor(random() * 400);
      batches.push(times.slice(i, i + size));
      i += size;
    }
    // Mostly in order, as a station posts; some late, as after an outage.
    const order = batches.map((_, i) => i).sort((a, b) => (random() < 0.2 ? random() - 0.5 : a - b));
    const check = async (step: string) => {
      const [fromKept, counted, facts, countedFacts] = await readInOneSnapshot(env().db.streamPool, async (client) => [
        await kept.spacingsOf(client, station), await wholeSeriesSpacings(client, station),
        await kept.factsOf(client, station), await wholeSeriesFacts(client, station),
      ] as const);
      assert.equal(fromKept.readings, counted.readings, `${step}: readings (SPACINGS_SEED=${seed})`);
      assert.deepEqual(new Map([...fromKept.spacings].sort()), new Map([...counted.spacings].sort()), `${step}: spacings (SPACINGS_SEED=${seed})`);
      assert.deepEqual(facts, countedFacts, `${step}: facts (SPACINGS_SEED=${seed})`);
    };
    for (const [n, b] of order.entries()) {
      const readings = batches[b]!.map((t) => ({ timestamp: new Date(t).toISOString(), temperature_c: 5 }));
      const { status } = await postBatch(env(), key, { station_id: station, readings });
      assert.equal(status, 201);
      if (random() < 0.1) await postBatch(env(), key, { station_id: station, readings });
      if (n % 3 === 0) await check(`after ${n + 1} batches`);
      if (random() < 0.08) {
        const first = Math.floor(random() * (times.length - 50));
        const last = first + Math.floor(random() * 50);
        await deleteReadings(env().db, { stationId: station, from: new Date(times[first]!).toISOString(), to: new Date(times[last]!).toISOString(), reason: 'test' });
        await check(`after a deletion after ${n + 1} batches`);
      }
    }
    await check('all posted');
  });
});
