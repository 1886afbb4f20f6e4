import type { Logger } from 'pino';
import type { Listener } from '../db/listener.js';
import type { Db } from '../db/pool.js';
import { logPageSize, readBatchReadings, readCurrentVersions, readLogSince, type LoggedBatch } from './liveQueries.js';
import { shapeReading, type Reading } from './shape.js';

/** One committed batch of a station's new readings. */
export type LiveBatch = { stationId: string; version: number; loggedAt: number; readings: readonly Reading[] };

/**
 * A live stream's subscriber: its stations, where it stands in each (the version of the last batch it was
 * given; the batches after it are given next), and how a batch reaches it.
 */
export type Subscriber = {
  stations: readonly string[];
  /** Given a station's position to resume from; filled for the others when subscribing. */
  cursor: Map<string, number>;
  /** Gives a batch; false when the subscriber's buffer is full (a replay then waits for `drained`). */
  send: (batch: LiveBatch) => boolean;
  /** Resolves once the subscriber's buffer has room again. */
  drained: () => Promise<void>;
  /** The replay of missed batches passed `maxReplayReadings`: the subscriber goes on from now. */
  replayCut: () => void;
  /** The service is stopping: the subscriber's answer ends. */
  end: () => void;
};

export type LiveReadings = {
  /**
   * Gives `subscriber` every batch of its stations committed after its position in each (from now for a
   * station it has none for), in the order they committed, each once. Resolves once the subscriber is
   * caught up, with the function that ends its subscription.
   */
  subscribe: (subscriber: Subscriber) => Promise<() => void>;
  /** Ends every subscription and stops listening. */
  close: () => Promise<void>;
};

/**
 * What the stream needs of one station: its subscribers, the newest batch this instance knows of, and a
 * chain on which everything about it happens in turn, so that each subscriber gets its batches in order.
 */
type Feed = { subscribers: Set<Subscriber>; known: number; chain: Promise<void> };

export const readingsChannel = 'envmon_readings';

/**
 * The most readings one resumption replays: beyond it the subscriber is told to read the history instead
 * and goes on from now. A replay is read page by page and sent under backpressure, so this bounds the time
 * a resumption takes, not the memory it holds.
 */
export const maxReplayReadings = 20_000;

/**
 * New readings as they commit, for every subscriber on this instance, whichever instance stored them:
 * the ingest transaction logs each batch's new readings (reading_log) and NOTIFYs `station version`,
 * which PostgreSQL delivers to every instance's listener at commit. A notification is only a nudge: the
 * feed reads the log from the newest batch it knows, so a notification missed while the listener
 * reconnected is made good on reconnection, and each batch's readings are read once per instance
 * however many subscribers it has. The listener runs while there are subscribers.
 */
export function createLiveReadings(db: Db, log?: Logger): LiveReadings {
  const feeds = new Map<string, Feed>();
  let listener: Listener | null = null;

  // Everything about a station runs on its chain; a failure (the database away) is logged, and the
  // next nudge or reconnection tries again from where the feed stands.
  const enqueue = (stationId: string, feed: Feed, step: () => Promise<void>) => {
    feed.chain = feed.chain.then(step).catch((error: unknown) => log?.warn({ err: error, station_id: stationId }, 'live readings could not be read'));
    return feed.chain;
  };

  // The batches after what the feed knows, given to every subscriber that stands before them.
  const pump = (stationId: string, feed: Feed) => enqueue(stationId, feed, async () => {
    for (;;) {
      const logged = await readLogSince(db.readPool, stationId, feed.known);
      for (const entry of logged) {
        const batch = await batchOf(stationId, entry);
        feed.known = entry.version;
        for (const subscriber of feed.subscribers) deliver(subscriber, batch);
      }
      if (logged.length < logPageSize) return;
    }
  });

  const batchOf = async (stationId: string, entry: LoggedBatch): Promise<LiveBatch> => ({
    stationId, version: entry.version, loggedAt: entry.loggedAt,
    readings: (await readBatchReadings(db.readPool, stationId, entry.runs)).map(shapeReading),
  });

  /** Gives the batch unless the subscriber has it; false when its buffer is full. */
  const deliver = (subscriber: Subscriber, batch: LiveBatch): boolean => {
    if ((subscriber.cursor.get(batch.stationId) ?? Infinity) >= batch.version) return true;
    subscriber.cursor.set(batch.stationId, batch.version);
    return subscriber.send(batch);
  };

  const ensureListening = () => {
    listener ??= db.listen(readingsChannel, {
      notify: (payload) => {
        const [stationId, version] = payload.split(' ');
        const feed = feeds.get(stationId!);
        if (feed && Number(version) > feed.known) void pump(stationId!, feed);
      },
      // (Re)connected: whatever was announced meanwhile is in the log.
      listening: () => {
        for (const [stationId, feed] of feeds) void pump(stationId, feed);
      },
    });
  };

  const feedOf = (stationId: string, current: number): Feed => {
    let feed = feeds.get(stationId);
    if (!feed) {
      feed = { subscribers: new Set(), known: current, chain: Promise.resolve() };
      feeds.set(stationId, feed);
    }
    return feed;
  };

  return {
    subscribe: async (subscriber) => {
      ensureListening();
      // Read after listening began: a batch committed from here on is both notified and above this mark.
      const current = await readCurrentVersions(db.readPool, subscriber.stations);
      const attached: [string, Feed][] = [];
      await Promise.all(subscriber.stations.map((stationId) => {
        const feed = feedOf(stationId, current.get(stationId) ?? 0);
        attached.push([stationId, feed]);
        return enqueue(stationId, feed, async () => {
          // A position past the station's newest batch names none that exists: the stream goes on from now.
          const given = subscriber.cursor.get(stationId);
          const from = given === undefined || given > (current.get(stationId) ?? 0) ? undefined : given;
          if (from === undefined) {
            subscriber.cursor.set(stationId, feed.known);
          } else {
            // Resuming: the batches it missed, read for it alone a page at a time and sent as its client
            // takes them, then it goes on with everyone. Past the bound it goes on from now.
            let replayed = 0;
            for (let more = true; more;) {
              const logged = await readLogSince(db.readPool, stationId, subscriber.cursor.get(stationId)!);
              for (const entry of logged) {
                if (entry.version > feed.known) break;
                if (replayed + entry.readings > maxReplayReadings) {
                  subscriber.cursor.set(stationId, feed.known);
                  subscriber.replayCut();
                  more = false;
                  break;
                }
                replayed += entry.readings;
                if (!deliver(subscriber, await batchOf(stationId, entry))) await subscriber.drained();
              }
              more &&= logged.length === logPageSize && logged.at(-1)!.version < feed.known;
            }
          }
          feed.subscribers.add(subscriber);
        });
      }));
      for (const [stationId, feed] of attached) void pump(stationId, feed);
      return () => {
        for (const [stationId, feed] of attached) {
          feed.subscribers.delete(subscriber);
          if (feed.subscribers.size === 0 && feeds.get(stationId) === feed) feeds.delete(stationId);
        }
        if (feeds.size === 0 && listener) {
          void listener.close();
          listener = null;
        }
      };
    },
    close: async () => {
      const subscribers = new Set([...feeds.values()].flatMap((feed) => [...feed.subscribers]));
      feeds.clear();
      for (const subscriber of subscribers) subscriber.end();
      await listener?.close();
      listener = null;
    },
  };
}
