import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'slonik';
import { z } from 'zod';
import { anotherInstance, describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { assertAggregateApiExact } from '../../helpers/oracle.js';
import { daysAgo } from '../../helpers/rollups.js';

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

  it('gives the last exact answer, saying as of when, while a backfill of the station cannot be refreshed yet', async function () {
    // Timescale's rollups only: portable's are exact in the writing transaction, and nothing waits.
    if (env().engine !== 'timescale') this.skip();
    this.timeout(120_000);
    const key = await stationWithKey(env(), 'bl-stale');
    const post = (readings: { timestamp: string; temperature_c: number }[]) => postBatch(env(), key, { station_id: 'bl-stale', readings });
    assert.equal((await post(Array.from({ length: 300 }, (_, i) => ({ timestamp: minute(i * 10, daysAgo(30)), temperature_c: i % 20 })))).status, 201);
    await env().db.rollups.refresh();
    const path = '/api/v1/data/aggregate/?station=bl-stale&period=day';
    const before = Date.now();
    const exact = await env().get(path);
    assert.equal(exact.status, 200);
    assert.equal(exact.headers.get('memento-datetime'), null);
    const exactBody = await exact.json();
    // Every refresh of the rollups waits while another session holds their lock, as a long refresh would.
    const holder = new pg.Client({ connectionString: env().databaseUrl });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(7301946500)');
      assert.equal((await post(Array.from({ length: 50 }, (_, i) => ({ timestamp: minute(i * 10 + 5, daysAgo(30)), temperature_c: 99 })))).status, 201);
      const stale = await env().get(path);
      assert.equal(stale.status, 200);
      const asOf = stale.headers.get('memento-datetime');
      assert.ok(asOf, 'the answer says as of when it is exact');
      assert.ok(Date.parse(asOf) >= Math.floor(before / 1000) * 1000 && Date.parse(asOf) <= Date.now(), asOf);
      assert.equal(stale.headers.get('cache-control'), 'no-cache');
      assert.deepEqual(await stale.json(), exactBody);
    } finally {
      await holder.end();
    }
    // The refresh goes through once the lock is free: the answer is exact again, backfill included.
    await env().db.rollups.refresh();
    const after = await env().get(path);
    assert.equal(after.headers.get('memento-datetime'), null);
    assert.ok((await assertAggregateApiExact(env().origin, env().db.pool, 'bl-stale')) > 0);
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

  it('is refreshed without JIT compilation, whatever the session asks, and leaves the session as it was', async function () {
    // Timescale's rollups only; and only where the server can compile (pg_jit_available), else nothing could differ.
    if (env().engine !== 'timescale') this.skip();
    this.timeout(60_000);
    const client = new pg.Client({ connectionString: env().databaseUrl });
    await client.connect();
    try {
      if (!(await client.query('select pg_jit_available() as on')).rows[0].on) {
        console.log('      (this server has no JIT provider: nothing to check)');
        this.skip();
      }
      const key = await stationWithKey(env(), 'bl-jit');
      // Every statement of this session compiled (costs above zero), and the plan of each nested one logged
      // to this client with its JIT section, if it has one.
      const logged: string[] = [];
      client.on('notice', (notice) => logged.push(notice.message ?? ''));
      for (const setting of ["load 'auto_explain'", 'set auto_explain.log_min_duration = 0', 'set auto_explain.log_analyze = on',
        'set auto_explain.log_nested_statements = on', 'set client_min_messages = log', 'set jit = on', 'set jit_above_cost = 0']) {
        await client.query(setting);
      }
      // The service refreshes a backfill's rollups at once too: when its refresh got there first, this
      // one had nothing to materialise, and another backfill (other days) is posted for it.
      let materialisations: string[] = [];
      for (let round = 0; round < 10; round++) {
        const readings = Array.from({ length: 500 }, (_, i) => ({ timestamp: minute(i * 7, daysAgo(400 + 10 * round)), temperature_c: i % 40 }));
        assert.equal((await postBatch(env(), key, { station_id: 'bl-jit', readings })).status, 201);
        logged.length = 0;
        await client.query('call envmon_refresh_rollups()');
        // The materialisations, each level's work (the procedure's own one-line statements around them are
        // compiled too under this session's settings, as any statement: none costs anything by default).
        materialisations = logged.filter((text) => /_timescaledb_internal\._materialized_hypertable_\d+ /.test(text));
        if (materialisations.filter((text) => text.includes('INSERT INTO')).length >= 4) break;
      }
      assert.ok(materialisations.filter((text) => text.includes('INSERT INTO')).length >= 4, `every level materialised (${materialisations.length} plans)`);
      assert.deepEqual(materialisations.filter((text) => /\bJIT:/.test(text)).map((text) => text.slice(0, 160)), []);
      assert.equal((await client.query('show jit')).rows[0].jit, 'on');
      assert.equal((await client.query('show default_transaction_isolation')).rows[0].default_transaction_isolation, 'read committed');
      // The check can fail: the same session compiles an ordinary statement.
      logged.length = 0;
      await client.query('select count(*) from readings where station_id = $1', ['bl-jit']);
      assert.ok(logged.some((text) => /\bJIT:/.test(text)), 'a statement outside the refresh is compiled');
    } finally {
      await client.end();
    }
  });
});
