import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { addStation, bulkFixture } from '../helpers/readings.js';

const noRows = z.object({});
// Downloads nobody reads must stay open: uncompressed, the 300,000-row history is far more than socket and
// client buffers hold, whereas compressed it could be written whole, and its slot freed, before the test looks.
const uncompressed = { 'Accept-Encoding': 'identity' };

describeEngines(
  'isolation: heavy reads and stalled downloads never hold up ingest or light reads',
  (env) => {
    before(async function () {
      this.timeout(60_000);
      await addStation(env().db, 'iso-big');
      await bulkFixture(env().databaseUrl, `
        insert into readings (station_id, ts, temperature_c, humidity_rh, pm10, quality_flag)
        select 'iso-big', date_trunc('minute', now()) - i * interval '1 minute', i % 30, i % 90, i % 50, 'ok'
        from generate_series(1, 300000) as i`);
      await env().db.pool.query(sql.type(noRows)`insert into station_latest select 'iso-big', max(ts) from readings where station_id = 'iso-big'`);
    });

    it('takes a batch within a second while four downloads stall, cuts them after the stall timeout and frees their connections', async function () {
      this.timeout(60_000);
      const key = await stationWithKey(env(), 'iso-in');
      const stalled = await Promise.all(
        [0, 1, 2, 3].map(async () => {
          const controller = new AbortController();
          const response = await env().get('/api/v1/data/download/?station=iso-big', { signal: controller.signal, headers: uncompressed });
          assert.equal(response.status, 200);
          return { response, controller };
        }),
      );
      // Nobody reads those bodies. A station posts meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = performance.now();
      const posted = await postBatch(env(), key, { station_id: 'iso-in', readings: [{ timestamp: new Date(Date.now() - 60_000).toISOString(), temperature_c: 4 }] });
      const ms = performance.now() - started;
      console.log(`      ingest answered ${posted.status} in ${ms.toFixed(0)} ms beside 4 stalled downloads`);
      assert.equal(posted.status, 201);
      assert.ok(ms < 2_000, `${ms} ms`);
      // STREAM_STALL_MS is 2 s here: the downloads are cut and their connections come back.
      const deadline = Date.now() + 15_000;
      while (env().db.streamPool.busy() > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(env().db.streamPool.busy(), 0, 'download connections still held');
      for (const { controller } of stalled) controller.abort();
    });

    it('caps concurrent downloads per client address with a 429', async function () {
      this.timeout(30_000);
      // DOWNLOADS_PER_CLIENT is 4 here.
      const controllers = [0, 1, 2, 3].map(() => new AbortController());
      const open = await Promise.all(controllers.map((c) => env().get('/api/v1/data/download/?station=iso-big', { signal: c.signal, headers: uncompressed })));
      try {
        assert.deepEqual(open.map((r) => r.status), [200, 200, 200, 200]);
        const third = await env().get('/api/v1/data/download/?station=iso-big');
        assert.equal(third.status, 429);
        assert.ok(Number(third.headers.get('retry-after')) >= 1);
        assert.match(third.headers.get('content-type') ?? '', /problem\+json/);
      } finally {
        for (const c of controllers) c.abort();
      }
      // Slots come back when the answers close.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const again = await env().get('/api/v1/data/download/?station=iso-big&from_date=2020-01-01&to_date=2020-01-01');
      assert.equal(again.status, 200);
      await again.arrayBuffer();
    });

    it('answers /data/latest/ within a second under 60 concurrent 720-hour histories', async function () {
      this.timeout(120_000);
      let stop = false;
      const probes: number[] = [];
      const probe = (async () => {
        while (!stop) {
          const started = performance.now();
          const response = await env().get('/api/v1/data/latest/?station=iso-big');
          await response.arrayBuffer();
          assert.equal(response.status, 200);
          probes.push(performance.now() - started);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();
      const statuses: number[] = [];
      const started = performance.now();
      await Promise.all(
        Array.from({ length: 60 }, async () => {
          const response = await env().get('/api/v1/data/historical/?station=iso-big&hours=720');
          const text = await response.text();
          statuses.push(response.status);
          if (response.status === 200) {
            const body = JSON.parse(text) as { count: number; readings: unknown[] };
            assert.equal(body.count, body.readings.length);
            assert.ok(body.count >= 43_000);
          }
        }),
      );
      const stormMs = performance.now() - started;
      stop = true;
      await probe;
      probes.sort((a, b) => a - b);
      const p50 = probes[Math.floor(probes.length / 2)]!;
      const max = probes.at(-1)!;
      console.log(`      60 histories in ${(stormMs / 1000).toFixed(1)} s (${statuses.filter((s) => s === 200).length} served); latest probe p50 ${p50.toFixed(0)} ms, max ${max.toFixed(0)} ms over ${probes.length}`);
      // A window longer than a day is a computed read: the address holds COMPUTED_PER_CLIENT of them at a
      // time, and the rest are refused at once (429) rather than left waiting for a connection (503).
      assert.ok(statuses.every((s) => s === 200 || s === 429), JSON.stringify(statuses));
      assert.ok(statuses.filter((s) => s === 200).length >= env().config.computedReads.perClient, JSON.stringify(statuses));
      // Loosely: the bench measures it; a shared machine is noisy.
      assert.ok(max < 3_000, `latest took ${max} ms`);
    });
  },
  { STREAM_STALL_MS: '2000', DOWNLOADS_PER_CLIENT: '4' },
);
