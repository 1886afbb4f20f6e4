import assert from 'node:assert/strict';
import http from 'node:http';
import { sql } from 'slonik';
import { z } from 'zod';
import { issueKey } from '../../src/stations/keys.js';
import { describeEngines } from '../helpers/app.js';
import { spawnServe } from '../helpers/cli.js';
import { addStation, bulkFixture } from '../helpers/readings.js';
import { openStream } from '../helpers/sse.js';

describeEngines('SIGTERM with ingests, downloads and a live stream in flight', (env) => {
  it('finishes or cleanly refuses what is in flight, exits 0 within 10 s, and keeps every reading it acknowledged', async function () {
    this.timeout(90_000);
    const { db } = env();
    await addStation(db, 'term-big');
    await bulkFixture(env().databaseUrl, `
      insert into readings (station_id, ts, temperature_c, quality_flag)
      select 'term-big', '2019-01-01'::timestamptz + i * interval '1 minute', 1, 'ok' from generate_series(1, 200000) as i`);
    const keys: string[] = [];
    for (let c = 0; c < 4; c++) {
      await addStation(db, `term-${c}`);
      keys.push((await issueKey(db.pool, `term-${c}`)).key);
    }
    const serve = await spawnServe({ RATE_LIMIT_PER_MINUTE: '0', DATABASE_URL: env().databaseUrl });
    const { url } = serve;

    // Each client posts batches of 2,000 readings back to back until the server stops answering.
    const acknowledged: { station: string; from: number; count: number }[] = [];
    const clients = keys.map(async (key, c) => {
      for (let batch = 0; ; batch++) {
        const from = Date.parse('2026-01-01T00:00:00Z') + batch * 2000 * 60_000;
        const readings = Array.from({ length: 2000 }, (_, i) => ({ timestamp: new Date(from + i * 60_000).toISOString(), temperature_c: c }));
        try {
          const response = await fetch(`${url}/api/v1/ingest/environmental/`, {
            method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
            body: JSON.stringify({ station_id: `term-${c}`, readings }),
          });
          if (response.status !== 201) return;
          const body = (await response.json()) as { accepted: number };
          acknowledged.push({ station: `term-${c}`, from, count: body.accepted });
        } catch {
          return;
        }
      }
    });
    // A live stream never ends by itself: the service ends it, and still exits within the drain.
    const stream = await openStream(`${url}/api/v1/data/stream/?stations=term-0`);
    await stream.next((e) => e.event === 'ready');
    const download = fetch(`${url}/api/v1/data/download/?station=term-big`)
      .then(async (response) => ({ status: response.status, text: await response.text() }))
      .catch((error: Error) => ({ status: 0, text: error.message }));
    await new Promise((r) => setTimeout(r, 700));
    const signalled = Date.now();
    const code = await serve.stop();
    const took = Date.now() - signalled;
    await Promise.all(clients);
    const downloaded = await download;

    assert.equal(code, 0, serve.stderr());
    assert.ok(took < 10_000, `exited after ${took} ms`);
    await stream.ended;
    assert.ok(stream.events.some((e) => e.event === 'readings'), 'the stream gave the batches stored before it ended');
    assert.ok(acknowledged.length >= 4, `${acknowledged.length} batches acknowledged before the signal`);
    // The download either completed or was cut; it never claimed success with a partial body and a 5xx.
    if (downloaded.status === 200 && downloaded.text.endsWith('\n')) {
      assert.equal(downloaded.text.split('\n').length - 1, 200_000 + 4);
    }
    for (const batch of acknowledged) {
      const stored = await db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from readings where station_id = ${batch.station}
          and ts >= ${new Date(batch.from).toISOString()} and ts < ${new Date(batch.from + 2000 * 60_000).toISOString()}`);
      assert.equal(stored, 2000, `${batch.station} batch from ${new Date(batch.from).toISOString()} acknowledged but not all there`);
    }
  });
});

describeEngines('SIGTERM with a download its client reads too slowly', (env) => {
  it('waits DRAIN_SECONDS for it, then cuts it and exits 1; with nothing in flight it exits 0', async function () {
    this.timeout(90_000);
    const { db } = env();
    await addStation(db, 'drain-big');
    await bulkFixture(env().databaseUrl, `
      insert into readings (station_id, ts, temperature_c, quality_flag)
      select 'drain-big', '2019-01-01'::timestamptz + i * interval '1 minute', 1, 'ok' from generate_series(1, 200000) as i`);
    const serve = await spawnServe({ RATE_LIMIT_PER_MINUTE: '0', DATABASE_URL: env().databaseUrl, DRAIN_SECONDS: '2', LOG_LEVEL: 'warn' });
    // A client that takes the first bytes and then reads no more: the download cannot finish.
    const reader = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${serve.url}/api/v1/data/download/?station=drain-big`, { headers: { 'Accept-Encoding': 'identity' } }, (response) => {
        response.once('data', () => {
          response.pause();
          resolve(response);
        });
      }).on('error', reject);
    });
    const code = await serve.stop();
    assert.equal(code, 1, serve.stderr());
    assert.match(serve.stderr(), /still in flight after the drain/);
    reader.destroy();

    const idle = await spawnServe({ RATE_LIMIT_PER_MINUTE: '0', DATABASE_URL: env().databaseUrl, DRAIN_SECONDS: '2' });
    assert.equal((await fetch(`${idle.url}/api/v1/`)).status, 200);
    assert.equal(await idle.stop(), 0, idle.stderr());
  });
});
