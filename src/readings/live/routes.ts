import { PassThrough } from 'node:stream';
import { sseEvent as event } from '../../formats/sse.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { stationListSchema } from '../../http/params.js';
import { addRoute, type Api } from '../../http/route.js';
import { clientSlots, guardStream } from '../../http/streamGuard.js';
import { z } from '../../http/zod.js';
import { maxReplayReadings, type LiveBatch, type LiveReadings } from './feed.js';
import { numericFields, type Reading } from '../reading.js';
import { requireStations } from '../core/scope.js';

export const maxStreamStations = 50;

const streamQuerySchema = z.object({
  stations: stationListSchema(maxStreamStations, 'alpine-01,coast-01'),
  param: z.enum(numericFields).optional().openapi({
    description: 'Give each reading as its timestamp, quality_flag and this field only, rather than whole',
  }),
});

// A resume position older than this may name batches the log no longer holds (it keeps an hour).
const replayableMs = 50 * 60_000;

/**
 * Where a stream stands, as its events' id: `station:version` for each station (the last batch given),
 * and `;` the time of that batch (epoch ms), by which a resumption knows whether the log still holds
 * everything after it. Station ids hold neither `:` nor `,` nor `;`.
 */
function formatPosition(cursor: Map<string, number>, at: number): string {
  return `${[...cursor].map(([station, version]) => `${station}:${version}`).join(',')};${Math.round(at)}`;
}

/** A Last-Event-ID this service gave; null for anything else (the stream then starts from now). */
function parsePosition(text: string | undefined): { cursor: Map<string, number>; at: number } | null {
  const match = /^([^;]*);(\d{1,15})$/.exec(text ?? '');
  if (!match) return null;
  const cursor = new Map<string, number>();
  for (const pair of match[1] ? match[1].split(',') : []) {
    const position = /^([A-Za-z0-9][A-Za-z0-9_.-]{0,63}):(\d{1,15})$/.exec(pair);
    if (!position) return null;
    cursor.set(position[1]!, Number(position[2]));
  }
  return { cursor, at: Number(match[2]) };
}


export function addLiveRoutes(api: Api, live: LiveReadings): void {
  const { config, db } = api.deps;
  const claimStreamSlot = clientSlots(config.streamsPerClient, `at most ${config.streamsPerClient} live streams at a time per client; close one first`);
  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/stream/', operationId: 'streamReadings', cache: cachePolicy.download, tag: 'Readings',
      summary: 'New readings of stations as they are stored, as Server-Sent Events',
      description:
        'A `text/event-stream` that stays open: an event `ready` (`{"stations": [...]}`) once it is caught up; then, each time a batch of one of the stations commits, ' +
        'on any instance of the service, an event `readings` (`{"station_id", "readings": [Reading, ...]}`, the batch\'s new readings oldest first; ' +
        'with `param`, each reading as `timestamp`, `quality_flag` and that field). A comment line every ' +
        `${config.streamHeartbeatMs / 1000} s keeps proxies from closing an idle stream. Every event carries an id naming where the stream stands; ` +
        'a client that reconnects with it as `Last-Event-ID` (EventSource does) is given every batch it missed and none twice, for an hour after the last ' +
        `one it received and up to ${maxReplayReadings} readings; later or beyond, an event \`reset\` says that readings may be missing (read /data/historical/ for them) and the stream goes on from now. ` +
        `At most ${config.streamsPerClient} streams at a time per client address.`,
      query: streamQuerySchema,
      responses: {
        200: { description: 'The stream of events', content: { 'text/event-stream': z.string() } },
        404: { description: 'A station is unknown' },
        429: { description: 'This client already has STREAMS_PER_CLIENT streams open' },
      },
    },
    async (ctx, { query }) => {
      await requireStations(db.pool, query.stations);
      claimStreamSlot(ctx);
      const resumed = parsePosition(ctx.get('Last-Event-ID') || undefined);
      // A position older than the log holds replays nothing: the stream says so and starts from now, as it
      // does for an id this service did not give.
      const replayable = resumed !== null && Date.now() - resumed.at <= replayableMs;
      const cursor = new Map(replayable ? [...resumed.cursor].filter(([station]) => query.stations.includes(station)) : []);
      const body = new PassThrough();
      let at = replayable ? resumed.at : Date.now();
      const shape = (reading: Reading) => (query.param
        ? { timestamp: reading.timestamp, quality_flag: reading.quality_flag, [query.param]: reading[query.param] }
        : reading);
      // Clients reconnect after two seconds when the connection drops.
      body.write('retry: 2000\n\n');
      if (resumed && !replayable) {
        body.write(event('reset', null, { detail: 'the stream resumed more than an hour after its last event: readings may be missing; read /data/historical/ for them' }));
      }
      let closed = false;
      let unsubscribe = () => {};
      const heartbeat = setInterval(() => body.write(': keep-alive\n\n'), config.streamHeartbeatMs);
      // A replay waiting for its client to take what it was given.
      let wake: (() => void) | null = null;
      ctx.res.once('close', () => {
        closed = true;
        wake?.();
        clearInterval(heartbeat);
        unsubscribe();
      });
      ctx.type = 'text/event-stream; charset=utf-8';
      ctx.set('X-Accel-Buffering', 'no');
      // Each event must leave at once: a compressor would hold it back.
      ctx.compress = false;
      // A client that stops reading is cut after STREAM_STALL_MS; a stream has no other deadline.
      guardStream(ctx, body, { deadlineMs: Number.MAX_SAFE_INTEGER, stallMs: config.streamStallMs });
      ctx.body = body;
      // Caught up once the answer has started: what a resumption missed is read a page at a time and sent as
      // the client takes it, and at most maxReplayReadings of it.
      void live.subscribe({
        stations: query.stations,
        cursor,
        send: (batch: LiveBatch) => {
          at = batch.loggedAt;
          return body.write(event('readings', formatPosition(cursor, at), { station_id: batch.stationId, readings: batch.readings.map(shape) }));
        },
        drained: () => new Promise<void>((resolve) => {
          if (closed || !body.writableNeedDrain) return resolve();
          // Woken by the drain, or by the close handler above when the client goes away first.
          const done = () => {
            body.off('drain', done);
            wake = null;
            resolve();
          };
          wake = done;
          body.once('drain', done);
        }),
        gone: () => closed,
        buffered: () => body.writableLength + body.readableLength + ctx.res.writableLength,
        overrun: () => {
          // No id: the client resumes from the last event it took, and what it missed is replayed as it reads.
          body.end(event('reset', null, { detail: 'this client fell too far behind the readings: reconnect with its Last-Event-ID to resume' }));
        },
        replayCut: () => {
          body.write(event('reset', null, { detail: `more than ${maxReplayReadings} readings were missed: read /data/historical/ for them; the stream goes on from now` }));
        },
        end: () => body.end(),
      }).then(
        (stop) => {
          if (closed) return stop();
          unsubscribe = stop;
          body.write(event('ready', formatPosition(cursor, at), { stations: query.stations }));
        },
        (error: unknown) => {
          api.deps.log.warn({ err: error }, 'a live stream could not be caught up');
          body.end();
        },
      );
    },
  );
}
