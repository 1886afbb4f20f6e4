import assert from 'node:assert/strict';
import { recordOverride } from '../../src/readings/overrides.js';
import { deleteReadings } from '../../src/readings/removal.js';
import { anotherInstance, describeEngines } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { assertAggregateApiExact } from '../helpers/oracle.js';
import { daysAgo } from '../helpers/rollups.js';

const minute = (i: number, base: string) => new Date(Date.parse(base) + i * 60_000).toISOString();
const readings = (base: string, count: number, offset: number, value: number) =>
  Array.from({ length: count }, (_, i) => ({ timestamp: minute(i * 3 + offset, base), temperature_c: value + (i % 7), pm2_5: (i * 37) % 1100 }));

describeEngines('aggregates asked again', (env) => {
  const other = anotherInstance(env);

  it('follow every change of the readings, made on this instance or another, by an override or a deletion', async function () {
    this.timeout(120_000);
    const { db } = env();
    const key = await stationWithKey(env(), 'ac-again');
    const base = daysAgo(12);
    const exact = async (what: string) => {
      // Twice on each instance: the second answer is the one kept from the first.
      for (const origin of [env().origin, env().origin, other().url, other().url]) {
        assert.ok((await assertAggregateApiExact(origin, db.pool, 'ac-again')) > 0, what);
      }
    };
    assert.equal((await postBatch(env(), key, { station_id: 'ac-again', readings: readings(base, 400, 0, 10) })).status, 201);
    await exact('first batch');
    // A backfill into the same buckets through the other instance.
    const backfill = await fetch(`${other().url}/api/v1/ingest/environmental/`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
      body: JSON.stringify({ station_id: 'ac-again', readings: readings(base, 400, 1, 40) }),
    });
    assert.equal(backfill.status, 201);
    await exact('backfill through the other instance');
    await recordOverride(db, { stationId: 'ac-again', from: minute(100, base), to: minute(400, base), flag: 'invalid', reason: 'test' });
    await exact('override');
    // Everything deleted, then as many readings stored again: a station's state is never taken for an earlier one.
    await deleteReadings(db, { stationId: 'ac-again', from: minute(0, base), to: minute(5000, base) });
    assert.equal((await postBatch(env(), key, { station_id: 'ac-again', readings: readings(base, 400, 2, 70) })).status, 201);
    await exact('deleted and stored again');
  });
});
