import assert from 'node:assert/strict';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { assertAggregateApiExact } from '../../helpers/oracle.js';
import { makeReadings } from '../../helpers/readings.js';

const hourMs = 3_600_000;
const dayMs = 24 * hourMs;
const monthStart = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1);
const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describeEngines('aggregates of a long history', (env) => {
  const id = 'lh-station';
  let key = '';
  // A reading every five hours over the 400 days before this month, and a few in it.
  const first = monthStart - 400 * dayMs;
  before(async function () {
    this.timeout(60_000);
    key = await stationWithKey(env(), id);
    const history = makeReadings(1920, new Date(first).toISOString(), 300, 7).concat(makeReadings(5, new Date(monthStart).toISOString(), 7, 8));
    for (let i = 0; i < history.length; i += 1000) {
      const readings = history.slice(i, i + 1000).map(({ ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10 }) =>
        ({ timestamp: ts, temperature_c, humidity_rh, pressure_hpa, pm2_5, pm10 }));
      assert.equal((await postBatch(env(), key, { station_id: id, readings })).status, 201);
    }
  });

  it('read hourly over the whole history and any range of it: equal to the GROUP BY', async function () {
    this.timeout(180_000);
    assert.ok((await assertAggregateApiExact(env().origin, env().db.pool, id)) > 1920);
    assert.ok((await assertAggregateApiExact(env().origin, env().db.pool, id, { from: isoDate(first + 11 * dayMs), to: isoDate(first + 390 * dayMs) })) > 0);
  });

  it('never show part of a batch, hourly or daily, while batches land and are refreshed', async function () {
    this.timeout(180_000);
    // Each batch adds a reading to an hour early in the history and one to an hour late in it: in
    // different pieces of an hourly answer, and in different ranges of a timescale refresh. Every
    // answer must count as many of them early as late.
    const early = Math.floor((first + 20 * dayMs) / hourMs) * hourMs;
    const late = Math.floor((monthStart - 20 * dayMs) / hourMs) * hourMs;
    const countsOf = async (period: 'hour' | 'day') => {
      const { status, body } = await env().getJson(`/api/v1/data/aggregate/?station=${id}&period=${period}`);
      assert.equal(status, 200);
      const width = period === 'hour' ? hourMs : dayMs;
      const count = (at: number) => (body.results as { period_start: string; count: number }[])
        .find((r) => r.period_start === new Date(Math.floor(at / width) * width).toISOString())?.count ?? 0;
      return [count(early), count(late)] as const;
    };
    const periods = ['hour', 'day'] as const;
    const before = await Promise.all(periods.map(countsOf));
    // Batches are posted until twenty answers have been read while they land.
    const wanted = 20;
    let posted = 0;
    let answers = 0;
    let done = false;
    const writing = (async () => {
      // A second apart within the hour: the history's readings are on the hour.
      for (; answers < wanted || posted < 10; posted++) {
        const readings = [early, late].map((hour) => ({ timestamp: new Date(hour + (posted + 1) * 1_000).toISOString(), temperature_c: posted }));
        assert.equal((await postBatch(env(), key, { station_id: id, readings })).status, 201);
      }
    })().finally(() => (done = true));
    while (!done) {
      const p = answers % 2;
      const [earlyCount, lateCount] = await countsOf(periods[p]!);
      const [earlyBefore, lateBefore] = before[p]!;
      assert.equal(earlyCount - earlyBefore, lateCount - lateBefore, `answer ${answers} (${periods[p]}): batches counted early and late`);
      answers++;
    }
    await writing;
    for (const [p, period] of periods.entries()) {
      const [earlyAfter, lateAfter] = await countsOf(period);
      assert.deepEqual([earlyAfter - before[p]![0], lateAfter - before[p]![1]], [posted, posted], period);
    }
  });
});
