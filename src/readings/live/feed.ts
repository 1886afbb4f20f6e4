import type { Logger } from 'pino';
import type { Listener } from '../../db/listener.js';
import type { Db } from '../../db/pool.js';
import { logPageSize, readBatchReadings, readCurrentVersions, readLogSince, type LoggedBatch } from './queries.js';
import { shapeReading, type Reading } from '../reading.js';

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
  /** The client went away: nothing more is read for it. */
  gone: () => boolean;
  /** Bytes given and not yet taken by the client. */
  buffered: () => number;
  /** The replay of missed batches passed `maxReplayReadings`: the subscriber goes on from now. */
  replayCut: () => void;
  /**
   * The client fell behind by more than its share of memory: its subscription has ended, and its answer
   * must end too (its client resumes from the last event it took, replayed under backpressure).
   */
  overrun: () => void;
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
/** The readings a resumption may still replay over all its stations; `cut` once one did not fit. */
type Allowance = { left: number; cut: boolean };

type Feed = { subscribers: Set<Subscriber>; known: number; chain: Promise<void>; joining: number };

export const readingsChannel = 'envmon_readings';

/**
 * The most readings one resumption replays: beyond it the subscriber is told to read the history instead
 * and goes on from now. A replay is read page by page and sent under backpressure, so this bounds the time
 * a resumption takes, not the memory it holds.
 */
export const maxReplayReadings = 20_000;

/** Resumptions replaying at once on this instance; more wait their turn, so replays hold bounded memory. */
export const maxConcurrentReplays = 4;

/**
 * What one stream may hold of new readings its client has not taken, and what all of an instance's
 * streams may hold together: a stream past either is ended (its client resumes from its last event,
 * replayed under backpressure), so that clients that stop reading cannot fill the memory.
 */
export const streamBufferBytes = 4 * 1024 * 1024;
export const streamsBufferBytes = 64 * 1024 * 1024;

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
        for (const subscriber of feed.subscribers) {
          if (!deliver(subscriber, batch) && overran(subscriber)) endOverrun(subscriber);
        }
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

  const subscriptions = new Map<Subscriber, () => void>();

  /** The subscriber holds more than its share, or all streams together more than theirs and it some of it. */
  const overran = (subscriber: Subscriber): boolean => {
    const held = subscriber.buffered();
    if (held > streamBufferBytes) return true;
    let total = 0;
    for (const other of subscriptions.keys()) total += other.buffered();
    for (const other of inReplay) total += other.buffered();
    return held > 0 && total > streamsBufferBytes;
  };

  const endOverrun = (subscriber: Subscriber) => {
    subscriptions.get(subscriber)?.();
    subscriber.overrun();
  };

  // Replays reading the log at once, and those waiting for one of the maxConcurrentReplays turns. A
  // replay holds a turn while it reads and sends a batch, not while its client takes it: a client that
  // stops reading cannot keep others waiting.
  let replaying = 0;
  const waiting: (() => void)[] = [];
  const takeTurn = async (): Promise<void> => {
    if (replaying >= maxConcurrentReplays) await new Promise<void>((resolve) => waiting.push(resolve));
    else replaying++;
  };
  // A turn handed over keeps the count: the next in line takes it as it is.
  const giveTurn = () => {
    const next = waiting.shift();
    if (next) next();
    else replaying--;
  };
  // Subscribers replaying, for the bound on what all streams hold.
  const inReplay = new Set<Subscriber>();

  /**
   * Gives the subscriber, for it alone, the batches of a station after its position up to `until`, a
   * page of the log at a time, and takes their readings from `allowance`. With `turns`, it reads holding a
   * turn and waits, without one, for its client to take each batch; without, it sends them at once (on
   * the station's chain, what committed during the replay). False when the next batch did not fit the
   * allowance (the subscriber is told once, and goes on from now) or the client went away.
   */
  const replay = async (subscriber: Subscriber, stationId: string, until: number, allowance: Allowance, turns: boolean): Promise<boolean> => {
    for (;;) {
      const logged = await readLogSince(db.readPool, stationId, subscriber.cursor.get(stationId)!);
      for (const entry of logged) {
        if (entry.version > until) return true;
        if (allowance.cut || entry.readings > allowance.left) {
          if (!allowance.cut) subscriber.replayCut();
          allowance.cut = true;
          return false;
        }
        allowance.left -= entry.readings;
        if (!deliver(subscriber, await batchOf(stationId, entry)) && turns) {
          giveTurn();
          try {
            await subscriber.drained();
          } finally {
            await takeTurn();
          }
        }
        if (subscriber.gone()) return false;
      }
      if (logged.length < logPageSize) return true;
    }
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
      feed = { subscribers: new Set(), known: current, chain: Promise.resolve(), joining: 0 };
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
      const allowance: Allowance = { left: maxReplayReadings, cut: false };
      await Promise.all(subscriber.stations.map(async (stationId) => {
        const mark = current.get(stationId) ?? 0;
        // Kept while the subscriber joins, though its other subscribers leave meanwhile.
        const feed = feedOf(stationId, mark);
        feed.joining++;
        attached.push([stationId, feed]);
        try {
          // A position past the station's newest batch names none that exists: the stream goes on from now.
          const given = subscriber.cursor.get(stationId);
          const resuming = given !== undefined && given <= mark;
          if (resuming && given < mark) {
            // What it missed up to the mark is read for it alone, off the station's chain (whose other
            // subscribers go on meanwhile), at most maxReplayReadings over all its stations.
            await takeTurn();
            inReplay.add(subscriber);
            try {
              await replay(subscriber, stationId, mark, allowance, true);
            } finally {
              inReplay.delete(subscriber);
              giveTurn();
            }
          }
          await enqueue(stationId, feed, async () => {
            // Then, on the chain, what committed during that replay, and it goes on with everyone.
            const caughtUp = resuming && !allowance.cut && (await replay(subscriber, stationId, feed.known, allowance, false));
            if (!caughtUp) subscriber.cursor.set(stationId, feed.known);
            feed.subscribers.add(subscriber);
          });
        } finally {
          feed.joining--;
        }
      }));
      const unsubscribe = () => {
        subscriptions.delete(subscriber);
        for (const [stationId, feed] of attached) {
          feed.subscribers.delete(subscriber);
          if (feed.subscribers.size === 0 && feed.joining === 0 && feeds.get(stationId) === feed) feeds.delete(stationId);
        }
        if (feeds.size === 0 && listener) {
          void listener.close();
          listener = null;
        }
      };
      subscriptions.set(subscriber, unsubscribe);
      for (const [stationId, feed] of attached) void pump(stationId, feed);
      return unsubscribe;
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
