import assert from 'node:assert/strict';
import { pino } from 'pino';
import { sql } from 'slonik';
import { z } from 'zod';
import { demoFeedKeyLabel, startDemoFeed } from '../../../src/readings/demo/feed.js';
import { generateDemoReadings } from '../../../src/readings/demo/readings.js';
import { demoStations } from '../../../src/readings/demo/stations.js';
import { storeReadings } from '../../../src/readings/ingest/store.js';
import { issueKey } from '../../../src/stations/keys.js';
import { upsertStation } from '../../../src/stations/queries.js';
import { describeEngines } from '../../helpers/app.js';
import { eventually } from '../../helpers/rollups.js';

const minute = 60_000;

describeEngines('the live demo feed', (env) => {
  const [alpine, coast, urban] = demoStations;
  const readingRow = z.object({ ts: z.string(), temperature_c: z.number(), pressure_hpa: z.number(), quality_flag: z.string() });
  const readingsOf = (stationId: string) =>
    env().db.pool.any(sql.type(readingRow)`select ts, temperature_c, pressure_hpa, quality_flag from readings where station_id = ${stationId} order by ts`);
  const feedKeys = () => env().db.pool.anyFirst(sql.type(z.object({ station_id: z.string() }))`
    select station_id from station_keys where label = ${demoFeedKeyLabel} order by station_id`);

  it('fills the gap since the last reading, then posts a reading per active station every minute, through ingest', async function () {
    this.timeout(60_000);
    const { db } = env();
    const startedAt = Math.floor(Date.now() / minute) * minute;
    for (const station of [alpine!, coast!, urban!]) {
      const { station_id, name, location_name, altitude_m, latitude, longitude } = station;
      await upsertStation(db.pool, { station_id, name, location_name, altitude_m, latitude, longitude, status: station === urban ? 'offline' : 'active' });
    }
    // alpine-01 stopped two hours ago (the service was down); coast-01 has never reported.
    const history = [...generateDemoReadings(alpine!.climate!, new Date(startedAt - 180 * minute), 60, 1, { dustEvent: false })];
    await storeReadings(db, 'alpine-01', history);
    // A key a killed run left behind.
    await issueKey(db.pool, 'alpine-01', demoFeedKeyLabel);

    let clock = startedAt + 5_000;
    const feed = await startDemoFeed({ db: db.pool, origin: env().origin, log: pino({ level: 'silent' }), intervalMs: 100, now: () => clock });
    try {
      assert.deepEqual(await feedKeys(), ['alpine-01', 'coast-01'], 'one key per active demo station; the leftover is gone');
      await eventually(async () => {
        assert.equal((await readingsOf('alpine-01')).at(-1)?.ts, new Date(startedAt).toISOString());
        assert.equal((await readingsOf('coast-01')).length, 1);
      }, 30_000);
      const alpineReadings = await readingsOf('alpine-01');
      assert.equal(alpineReadings.length, 181, 'every minute of the gap, once');
      alpineReadings.forEach((r, i) => assert.equal(Date.parse(r.ts), startedAt - 180 * minute + i * minute));
      assert.ok(alpineReadings.every((r) => r.quality_flag === 'ok'), 'no dust event in live readings');
      const climate = alpine!.climate!;
      for (const r of alpineReadings) {
        assert.ok(Math.abs(r.temperature_c - climate.temperature) <= climate.temperatureSwing + 3, `plausible temperature ${r.temperature_c}`);
        assert.ok(Math.abs(r.pressure_hpa - climate.pressure) <= 10, `plausible pressure ${r.pressure_hpa}`);
      }
      // The first filled minute continues the stored history: no jump where the service was down.
      const seam = alpineReadings[60]!.temperature_c - alpineReadings[59]!.temperature_c;
      assert.ok(Math.abs(seam) < 1, `continuous at the seam (${seam})`);
      assert.equal((await readingsOf('urban-01')).length, 0, 'an offline station gets nothing');

      // The next minute comes: one more reading each, seen by latest and health.
      clock += minute;
      await eventually(async () => {
        const latest = await env().getJson('/api/v1/data/latest/?station=coast-01');
        assert.equal(latest.body.timestamp, new Date(startedAt + minute).toISOString());
      }, 10_000);
      assert.equal((await readingsOf('alpine-01')).length, 182);
      const health = await env().getJson('/api/v1/health/');
      assert.equal(health.body.stations.find((s: { station_id: string }) => s.station_id === 'alpine-01').fresh, true);
    } finally {
      await feed.stop();
    }
    assert.deepEqual(await feedKeys(), [], 'its keys go with it');
    const after = (await readingsOf('alpine-01')).length;
    clock += minute;
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await readingsOf('alpine-01')).length, after, 'nothing is posted once stopped');
  });
});
