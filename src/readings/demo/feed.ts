import { sql, type CommonQueryMethods } from 'slonik';
import type { Logger } from 'pino';
import { z } from 'zod';
import { deleteKeysLabelled, issueKey } from '../../stations/keys.js';
import { generateDemoReadings, type DemoClimate } from './readings.js';
import { demoStations } from './stations.js';

/** The label of the keys the feed issues itself, so that it can remove them, even those of a killed run. */
export const demoFeedKeyLabel = 'envmon demo feed';

const minute = 60_000;
/** How far back a restarted feed fills the gap since the last reading. */
const maxGapMs = 7 * 24 * 60 * minute;
const batchSize = 10_000;

export type DemoFeed = {
  /** Posts whatever minutes are due now (the gap since each station's last reading, or this minute). */
  tick: () => Promise<void>;
  /** Stops posting, waits for a post in flight, and deletes the feed's keys. */
  stop: () => Promise<void>;
};

export type DemoFeedOptions = {
  db: CommonQueryMethods;
  /** Where this service listens: readings go through its real ingest route, as a station's would. */
  origin: string;
  log: Logger;
  /** Between checks for a due minute: 5 s by default, so that each minute's reading lands within seconds of it. */
  intervalMs?: number;
  now?: () => number;
};

const latestRow = z.object({ station_id: z.string(), ts: z.string().nullable() });

/**
 * Keeps the demo live: every minute, one plausible reading per active demo station, posted to the
 * service's own ingest route with keys the feed issues itself. Each tick posts every minute since the
 * station's last reading (at most seven days), so a start after a pause fills the gap and a failed post
 * is made good by the next tick; ingest is idempotent, so a minute posted twice is a duplicate, never
 * a second reading. Failures are logged and never end the process.
 */
export async function startDemoFeed(options: DemoFeedOptions): Promise<DemoFeed> {
  const { db, origin, log, intervalMs = 5_000, now = Date.now } = options;
  await deleteKeysLabelled(db, demoFeedKeyLabel);
  const active = await db.anyFirst(sql.type(z.object({ station_id: z.string() }))`
    select station_id from stations
    where station_id = any(${sql.array(demoStations.filter((s) => s.climate).map((s) => s.station_id), 'text')}) and status = 'active'
  `);
  const feeds = new Map<string, { climate: DemoClimate; seed: number; key: string; last: number | undefined; failing: boolean }>();
  for (const [index, station] of demoStations.entries()) {
    if (!station.climate || !active.includes(station.station_id)) continue;
    const { key } = await issueKey(db, station.station_id, demoFeedKeyLabel);
    feeds.set(station.station_id, { climate: station.climate, seed: index + 1, key, last: undefined, failing: false });
  }
  for (const row of await db.any(sql.type(latestRow)`
    select s.station_id, l.ts from stations s left join station_latest l on l.station_id = s.station_id
    where s.station_id = any(${sql.array([...feeds.keys()], 'text')})
  `)) {
    feeds.get(row.station_id)!.last = row.ts === null ? undefined : Date.parse(row.ts);
  }

  const post = async (stationId: string, key: string, readings: Record<string, unknown>[]) => {
    const response = await fetch(`${origin}/api/v1/ingest/environmental/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Token ${key}` },
      body: JSON.stringify({ station_id: stationId, readings }),
    });
    if (response.status !== 201) throw new Error(`ingest answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
    await response.body?.cancel();
  };

  let stopped = false;
  const feedStation = async (stationId: string) => {
    const feed = feeds.get(stationId)!;
    const due = Math.floor(now() / minute) * minute;
    const from = Math.max(feed.last === undefined ? due : Math.floor(feed.last / minute) * minute + minute, due - maxGapMs);
    for (let start = from; start <= due && !stopped; start += batchSize * minute) {
      const count = Math.min(batchSize, (due - start) / minute + 1);
      // Seeded by the minute, so that the noise differs from minute to minute and a re-post is the same reading.
      const readings = [...generateDemoReadings(feed.climate, new Date(start), count, feed.seed * 1_000_003 + start / minute, { dustEvent: false })];
      await post(stationId, feed.key, readings.map(({ ts, quality_flag: _flag, module_data: _none, ...values }) => ({ timestamp: ts, ...values })));
      feed.last = start + (count - 1) * minute;
    }
  };

  const tick = async () => {
    for (const stationId of feeds.keys()) {
      const feed = feeds.get(stationId)!;
      try {
        await feedStation(stationId);
        if (feed.failing) log.info({ station: stationId }, 'demo feed posts again');
        feed.failing = false;
      } catch (error) {
        // Once per failing spell, not at every tick; the next tick posts what this one missed.
        if (!feed.failing) log.warn({ err: error, station: stationId }, 'demo feed could not post; it retries every minute');
        feed.failing = true;
      }
    }
  };

  let running: Promise<void> = tick();
  const timer = setInterval(() => {
    running = running.then(() => (stopped ? undefined : tick()));
  }, intervalMs);
  timer.unref();
  return {
    tick: () => (running = running.then(tick)),
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
      await deleteKeysLabelled(db, demoFeedKeyLabel);
    },
  };
}
