import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { anotherInstance, describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { eventually } from '../../helpers/rollups.js';
import { openStream, type SseEvent } from '../../helpers/sse.js';
import { maxConcurrentReplays } from '../../../src/readings/live/feed.js';

// Minutes of the last two hours, so that every batch is live on timescale too (above the horizon).
const base = Math.floor(Date.now() / 60_000) * 60_000 - 100 * 60_000;
const minute = (i: number) => new Date(base + i * 60_000).toISOString();
const readings = (minutes: number[]) => minutes.map((i) => ({ timestamp: minute(i), temperature_c: 10 + i / 10, humidity_rh: 50, pm2_5: i % 30 }));

type Batch = { station_id: string; readings: { timestamp: string; temperature_c?: number | null; [key: string]: unknown }[] };
const batchOf = (event: SseEvent) => JSON.parse(event.data) as Batch;
const timestampsOf = (events: SseEvent[], station?: string) =>
  events.filter((e) => e.event === 'readings').map(batchOf).filter((b) => !station || b.station_id === station).flatMap((b) => b.readings.map((r) => r.timestamp));

describeEngines('live readings stream', (env) => {
  const other = anotherInstance(env);

  const streamUrl = (query: string) => `${env().origin}/api/v1/data/stream/?${query}`;

  it('pushes a batch stored through another instance to a subscriber of this one within a second', async () => {
    const key = await stationWithKey(env(), 'live-a');
    await stationWithKey(env(), 'live-b');
    const stream = await openStream(streamUrl('stations=live-a,live-b'));
    try {
      assert.equal(stream.status, 200);
      assert.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8');
      assert.equal(stream.headers['access-control-allow-origin'], '*');
      assert.equal(stream.headers['cache-control'], 'no-store');
      assert.equal(stream.headers['content-encoding'], undefined);
      const ready = await stream.next((e) => e.event === 'ready');
      assert.deepEqual(JSON.parse(ready.data), { stations: ['live-a', 'live-b'] });
      const posted = readings([1, 2, 3]);
      const response = await fetch(`${other().url}/api/v1/ingest/environmental/`, {
        method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
        body: JSON.stringify({ station_id: 'live-a', readings: posted }),
      });
      const answered = Date.now();
      assert.equal(response.status, 201);
      const event = await stream.next((e) => e.event === 'readings', 2_000);
      assert.ok(event.at - answered < 1_000, `delivered ${event.at - answered} ms after the 201`);
      const batch = batchOf(event);
      assert.equal(batch.station_id, 'live-a');
      assert.deepEqual(batch.readings.map((r) => [r.timestamp, r.temperature_c, r.quality_flag]), posted.map((r) => [r.timestamp, r.temperature_c, 'ok']));
      assert.deepEqual(Object.keys(batch.readings[0]!), ['timestamp', 'temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index', 'quality_flag', 'firmware_version', 'module_data']);
      // The id names where the stream stands in each station.
      assert.match(event.id ?? '', /^live-a:\d+,live-b:\d+;\d+$/);
    } finally {
      stream.close();
    }
  });

  it('resumes after a dropped connection with every new reading it missed, none twice, in the order they were stored', async () => {
    const key = await stationWithKey(env(), 'live-resume');
    const first = await openStream(streamUrl('stations=live-resume'));
    await first.next((e) => e.event === 'ready');
    assert.equal((await postBatch(env(), key, { station_id: 'live-resume', readings: readings([10, 12, 14]) })).status, 201);
    const seen = await first.next((e) => e.event === 'readings');
    first.close();
    await first.ended;
    // Meanwhile: live readings, a backfill, a batch filling gaps between stored ones (and repeating one),
    // a batch of duplicates only, and one through the other instance.
    const posts = [
      [20, 21, 22],
      [1, 2],
      [11, 12, 13],
      [20, 21],
    ];
    for (const minutes of posts) assert.equal((await postBatch(env(), key, { station_id: 'live-resume', readings: readings(minutes) })).status, 201);
    await fetch(`${other().url}/api/v1/ingest/environmental/`, {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
      body: JSON.stringify({ station_id: 'live-resume', readings: readings([30]) }),
    });
    const second = await openStream(streamUrl('stations=live-resume'), { 'Last-Event-ID': seen.id! });
    try {
      await second.next((e) => e.event === 'ready');
      assert.deepEqual(timestampsOf(second.events), [20, 21, 22, 1, 2, 11, 13, 30].map(minute));
      // And it goes on live from there.
      assert.equal((await postBatch(env(), key, { station_id: 'live-resume', readings: readings([40]) })).status, 201);
      await second.next((e) => e.event === 'readings' && e.data.includes(minute(40)));
      assert.deepEqual(timestampsOf(second.events), [20, 21, 22, 1, 2, 11, 13, 30, 40].map(minute));
      assert.equal(second.events.filter((e) => e.event === 'reset').length, 0);
    } finally {
      second.close();
    }
  });

  it('goes on after its listening connection is terminated, with the batches stored meanwhile', async () => {
    const key = await stationWithKey(env(), 'live-cut');
    const stream = await openStream(streamUrl('stations=live-cut'));
    try {
      await stream.next((e) => e.event === 'ready');
      // The stream listens on a connection of its own, opened as the first subscriber came.
      let terminated = 0;
      for (const deadline = Date.now() + 5_000; terminated === 0 && Date.now() < deadline; await sleep(50)) {
        terminated = await env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
          select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
          where datname = current_database() and application_name = 'envmon listen' and query ilike 'listen %'`);
      }
      assert.ok(terminated >= 1, 'a listening connection to terminate');
      assert.equal((await postBatch(env(), key, { station_id: 'live-cut', readings: readings([50, 51]) })).status, 201);
      await stream.next((e) => e.event === 'readings', 10_000);
      assert.deepEqual(timestampsOf(stream.events), [50, 51].map(minute));
    } finally {
      stream.close();
    }
  });

  it('gives one field with param, keeps idle streams open with comments, and says reset after an hour away', async () => {
    const key = await stationWithKey(env(), 'live-param');
    const stream = await openStream(streamUrl('stations=live-param&param=pm2_5'));
    try {
      await stream.next((e) => e.event === 'ready');
      await postBatch(env(), key, { station_id: 'live-param', readings: readings([60]) });
      const batch = batchOf(await stream.next((e) => e.event === 'readings'));
      assert.deepEqual(batch.readings, [{ timestamp: minute(60), quality_flag: 'ok', pm2_5: 0 }]);
      const comments = stream.comments;
      await sleep(1_300);
      assert.ok(stream.comments > comments, 'a heartbeat comment within the interval');
    } finally {
      stream.close();
    }
    const stale = await openStream(streamUrl('stations=live-param'), { 'Last-Event-ID': `live-param:1;${Date.now() - 2 * 3_600_000}` });
    try {
      const reset = await stale.next((e) => e.event === 'reset');
      assert.match(JSON.parse(reset.data).detail, /readings may be missing/);
      await stale.next((e) => e.event === 'ready');
    } finally {
      stale.close();
    }
  });

  it('replays at most a bounded number of missed readings, as the client takes them, then says reset and goes on', async function () {
    this.timeout(120_000);
    const key = await stationWithKey(env(), 'live-bound');
    // Three batches of 10,000: more than one resumption replays.
    for (let b = 0; b < 3; b++) {
      const batch = Array.from({ length: 10_000 }, (_, i) => ({ timestamp: minute(-40_000 + b * 10_000 + i), temperature_c: i % 40 }));
      assert.equal((await postBatch(env(), key, { station_id: 'live-bound', readings: batch })).status, 201);
    }
    const stream = await openStream(streamUrl('stations=live-bound'), { 'Last-Event-ID': `live-bound:0;${Date.now() - 60_000}` });
    try {
      const reset = await stream.next((e) => e.event === 'reset', 60_000);
      assert.match(JSON.parse(reset.data).detail, /more than 20000 readings were missed/);
      await stream.next((e) => e.event === 'ready', 60_000);
      const replayed = stream.events.filter((e) => e.event === 'readings').reduce((n, e) => n + batchOf(e).readings.length, 0);
      assert.equal(replayed, 20_000, 'the whole batches that fit the bound');
      // Then it goes on from now.
      assert.equal((await postBatch(env(), key, { station_id: 'live-bound', readings: readings([95]) })).status, 201);
      const next = batchOf(await stream.next((e) => e.event === 'readings' && batchOf(e).readings.some((r) => r.timestamp === minute(95)), 30_000));
      assert.equal(next.readings.length, 1);
    } finally {
      stream.close();
    }
    // A position this service could not have given an hour ago replays nothing at all.
    const ancient = await openStream(streamUrl('stations=live-bound'), { 'Last-Event-ID': 'live-bound:0;0' });
    try {
      await ancient.next((e) => e.event === 'reset');
      await ancient.next((e) => e.event === 'ready');
      assert.equal(ancient.events.filter((e) => e.event === 'readings').length, 0);
    } finally {
      ancient.close();
    }
  });

  it('answers a wrong request with a problem, and refuses a stream past STREAMS_PER_CLIENT', async () => {
    await stationWithKey(env(), 'live-limit');
    const unknown = await fetch(streamUrl('stations=live-limit,nowhere'));
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers.get('content-type'), 'application/problem+json');
    const wrong = await fetch(streamUrl('stations=live-limit&param=colour'));
    assert.equal(wrong.status, 400);
    assert.equal(((await wrong.json()) as { errors: { param: string }[] }).errors[0]!.param, 'param');
    const open = await Promise.all([1, 2].map(() => openStream(streamUrl('stations=live-limit'))));
    try {
      const third = await fetch(streamUrl('stations=live-limit'));
      assert.equal(third.status, 429);
      assert.ok(third.headers.get('retry-after'));
    } finally {
      for (const stream of open) stream.close();
    }
  });
}, { STREAMS_PER_CLIENT: '2', STREAM_HEARTBEAT_SECONDS: '1' });

describeEngines('a live stream whose client stops reading', (env) => {
  it('is ended with a reset once it holds more than its share, long before STREAM_STALL_MS, and its client can resume', async function () {
    this.timeout(180_000);
    const key = await stationWithKey(env(), 'live-idle');
    const { origin } = env();
    // A client that takes the first events, then stops reading: the socket's buffers fill, then the server's.
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${origin}/api/v1/data/stream/?stations=live-idle`, resolve).on('error', reject);
    });
    const chunks: Buffer[] = [];
    let ended = false;
    answer.on('data', (chunk: Buffer) => chunks.push(chunk));
    answer.on('end', () => (ended = true));
    await eventually(async () => assert.ok(Buffer.concat(chunks).toString().includes('event: ready')), 30_000, 20);
    answer.pause();
    // Far more than the socket buffers and the stream's share together: 40 batches of 10,000 whole readings.
    let posted = 0;
    for (let b = 0; b < 40; b++) {
      const batch = Array.from({ length: 10_000 }, (_, i) => ({ timestamp: new Date(base - (b * 10_000 + i + 1) * 1_000).toISOString(), temperature_c: i % 40, humidity_rh: 50, pm2_5: 3 }));
      assert.equal((await postBatch(env(), key, { station_id: 'live-idle', readings: batch })).status, 201);
      posted += 10_000;
    }
    answer.resume();
    await eventually(async () => assert.ok(ended, 'the stream ended'), 120_000, 50);
    const text = Buffer.concat(chunks).toString();
    const events = text.split('\n\n').filter((block) => block.startsWith('event: '));
    const last = events.at(-1)!;
    assert.match(last, /^event: reset\n/);
    assert.match(last, /fell too far behind/);
    const given = events.filter((block) => block.startsWith('event: readings')).length;
    assert.ok(given < 40, `${given} of 40 batches were given before the stream ended`);
    // The id of the last event it took resumes it, with what it missed replayed as it reads.
    const lastId = /id: (.*)\n/.exec(events.filter((block) => block.includes('\nid: ')).at(-1)!)![1]!;
    const resumed = await openStream(`${origin}/api/v1/data/stream/?stations=live-idle`, { 'Last-Event-ID': lastId });
    try {
      await resumed.next((e) => e.event === 'ready', 120_000);
      const replayed = resumed.events.filter((e) => e.event === 'readings').reduce((n, e) => n + batchOf(e).readings.length, 0);
      assert.ok(replayed > 0 && replayed <= 20_000, `${replayed} of ${posted} readings replayed`);
    } finally {
      resumed.close();
    }
  });

  it('replays to a reading client while resumptions whose clients stopped reading wait for them, not in its way', async function () {
    this.timeout(180_000);
    const key = await stationWithKey(env(), 'live-crowd');
    const { origin } = env();
    // Fifteen thousand readings carrying 2 KB each: far more than a socket's buffers hold.
    const note = 'n'.repeat(2_000);
    for (let b = 0; b < 10; b++) {
      const batch = Array.from({ length: 1_500 }, (_, i) => ({ timestamp: new Date(base - (b * 1_500 + i + 1) * 1_000).toISOString(), temperature_c: 1, module_data: { note } }));
      assert.equal((await postBatch(env(), key, { station_id: 'live-crowd', readings: batch })).status, 201);
    }
    const from = `live-crowd:0;${Date.now() - 60_000}`;
    // More stalled resumptions than replays run at once: each takes its first events, then stops reading.
    const stalled = await Promise.all(Array.from({ length: maxConcurrentReplays + 2 }, () => new Promise<http.IncomingMessage>((resolve, reject) => {
      http.get(`${origin}/api/v1/data/stream/?stations=live-crowd`, { headers: { 'Last-Event-ID': from } }, (answer) => {
        answer.once('data', () => answer.pause());
        resolve(answer);
      }).on('error', reject);
    })));
    try {
      const reader = await openStream(`${origin}/api/v1/data/stream/?stations=live-crowd`, { 'Last-Event-ID': from });
      try {
        await reader.next((e) => e.event === 'ready', 120_000);
        const replayed = reader.events.filter((e) => e.event === 'readings').reduce((n, e) => n + batchOf(e).readings.length, 0);
        assert.equal(replayed, 15_000);
      } finally {
        reader.close();
      }
    } finally {
      for (const answer of stalled) answer.destroy();
    }
  });
}, { STREAM_STALL_MS: '3600000', STREAMS_PER_CLIENT: '50' });
