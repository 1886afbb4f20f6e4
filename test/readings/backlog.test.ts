import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { anotherInstance, describeEngines } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { assertAggregateApiExact } from '../helpers/oracle.js';
import { daysAgo } from '../helpers/rollups.js';

const minute = (i: number, base: string) => new Date(Date.parse(base) + i * 60_000).toISOString();

describeEngines('a backfill answered before its rollups are refreshed', (env) => {
  const other = anotherInstance(env);

  it('is in every aggregate read right after the 201, on the instance that took it and on another one', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'bl-two');
    const base = daysAgo(20);
    const old = Array.from({ length: 600 }, (_, i) => ({ timestamp: minute(i * 2, base), temperature_c: (i % 50) - 10, pm2_5: i % 1200 }));
    assert.equal((await postBatch(env(), key, { station_id: 'bl-two', readings: old })).status, 201);
    await env().db.rollups.refresh();
    // Into the same, already materialised buckets, through the other instance; read back at once on both.
    const backfill = old.map((r, i) => ({ ...r, timestamp: minute(i * 2 + 1, base), temperature_c: 70 - (i % 9) }));
    const posted = await fetch(`${other().url}/api/v1/ingest/environmental/`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
      body: JSON.stringify({ station_id: 'bl-two', readings: backfill }),
    });
    assert.equal(posted.status, 201);
    assert.equal(((await posted.json()) as { accepted: number }).accepted, 600);
    assert.ok((await assertAggregateApiExact(env().origin, env().db.pool, 'bl-two')) > 0);
    assert.ok((await assertAggregateApiExact(other().url, env().db.pool, 'bl-two')) > 0);
  });

  it('leaves no backlog once the rollups are refreshed, and none at all on portable', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'bl-clear');
    const readings = Array.from({ length: 100 }, (_, i) => ({ timestamp: minute(i, daysAgo(3)), temperature_c: i }));
    assert.equal((await postBatch(env(), key, { station_id: 'bl-clear', readings })).status, 201);
    await env().db.rollups.refresh();
    const left = await env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from rollup_backlog`);
    assert.equal(left, 0);
  });
});
