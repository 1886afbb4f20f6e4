// bench/stream: the live stream's latency across instances. Two `envmon serve` processes on one database;
// a subscriber of the second receives the readings a station posts through the first, one reading a
// batch as a station sends live, and the time from each 201 to its event is measured. With several
// subscribers at once, every one of them is timed. BENCH_STREAM_POSTS (200) batches, BENCH_STREAM_SUBSCRIBERS (1,20).
import { openStream, type SseStream } from '../test/helpers/sse.js';
import { eachEngine, percentile, startServe, stationsWithKeys } from './lib.js';

const posts = Number(process.env.BENCH_STREAM_POSTS ?? 200);
const subscriberCounts = (process.env.BENCH_STREAM_SUBSCRIBERS ?? '1,20').split(',').map(Number);

await eachEngine('stream', async (engine, databaseUrl) => {
  const results: Record<string, unknown>[] = [];
  const [key] = await stationsWithKeys(databaseUrl, ['stream-1']);
  const writer = await startServe(databaseUrl);
  const reader = await startServe(databaseUrl, { STREAMS_PER_CLIENT: '1000' });
  let minute = Math.floor(Date.now() / 60_000) * 60_000 - posts * subscriberCounts.length * 60_000;
  try {
    for (const subscribers of subscriberCounts) {
      const streams: SseStream[] = await Promise.all(Array.from({ length: subscribers }, () => openStream(`${reader.url}/api/v1/data/stream/?stations=stream-1`)));
      await Promise.all(streams.map((s) => s.next((e) => e.event === 'ready')));
      const latencies: number[] = [];
      for (let i = 0; i < posts; i++) {
        const timestamp = new Date((minute += 60_000)).toISOString();
        const response = await fetch(`${writer.url}/api/v1/ingest/environmental/`, {
          method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
          body: JSON.stringify({ station_id: 'stream-1', readings: [{ timestamp, temperature_c: 20, humidity_rh: 50 }] }),
        });
        const answered = performance.now();
        if (response.status !== 201) throw new Error(`ingest ${response.status}`);
        await response.arrayBuffer();
        const events = await Promise.all(streams.map((s) => s.next((e) => e.event === 'readings' && e.data.includes(timestamp), 10_000)));
        // SseEvent.at is Date.now(); the 201 is timed on the same clock.
        const answeredAt = Date.now() - (performance.now() - answered);
        for (const event of events) latencies.push(Math.max(0, event.at - answeredAt));
      }
      for (const stream of streams) stream.close();
      latencies.sort((a, b) => a - b);
      const ms = (value: number | undefined) => +(value ?? NaN).toFixed(1);
      const row = { engine, subscribers, posts, p50_ms: ms(percentile(latencies, 50)), p99_ms: ms(percentile(latencies, 99)), max_ms: ms(latencies.at(-1)) };
      results.push(row);
      console.log(`${engine.padEnd(9)} ${String(subscribers).padStart(3)} subscriber(s) on the other instance: 201 to event p50 ${row.p50_ms} ms, p99 ${row.p99_ms} ms, max ${row.max_ms} ms (${posts} batches)`);
    }
  } finally {
    await writer.stop();
    await reader.stop();
  }
  return results;
});
