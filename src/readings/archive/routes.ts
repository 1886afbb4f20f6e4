import Bourne from '@hapi/bourne';
import type { Context } from 'koa';
import { bodyProblem } from '../../http/bodyProblem.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { badRequest, invalidParameters, notFound, Problem } from '../../http/problem.js';
import { readBody } from '../../http/requestBody.js';
import { addRoute, type Api } from '../../http/route.js';
import { z } from '../../http/zod.js';
import { stationIdSchema } from '../../http/params.js';
import { parquetType } from '../../formats/parquet.js';
import { licenseUrl } from '../core/attribution.js';
import { instantAsOf, type AsOf } from '../core/asOf.js';
import { finerThanMillisecond, finerThanMillisecondReason } from '../core/millisecond.js';
import { requireStation, requireStations } from '../core/scope.js';
import { SnapshotTooLargeError, type SnapshotSource } from '../core/snapshotSource.js';
import { listChanges } from './changes.js';
import { sendFile } from './fileAnswer.js';
import { parseSnapshotUrl, type SnapshotQuery } from './snapshotQuery.js';
import {
  checkSnapshotLimits, isStored, readStoredFile, SnapshotQuotaError, SnapshotStoreFullError, storeMadeFile, type SnapshotLimits,
} from './snapshotStore.js';
import {
  createSnapshot, findSnapshot, findSnapshotAsOf, liveDiffers, querySnapshot, remakeFile, snapshotAsOf, snapshotCitationOf, snapshotFormats,
  snapshotSettings, snapshotUrl, type SnapshotFormat, type SnapshotRow,
} from './snapshots.js';

const fileSchema = z.object({ url: z.string().url(), bytes: z.number().int(), rows: z.number().int(), sha256: z.string() });
const snapshotSchema = z
  .object({
    id: z.string(),
    url: z.string().url(),
    as_of: z.string().datetime(),
    query: z.string().url(),
    created_at: z.string().datetime(),
    citation: z.string(),
    formats: z.object({ csv: fileSchema, parquet: fileSchema }),
  })
  .openapi('Snapshot');

const changeSchema = z
  .object({
    kind: z.enum(['backfill', 'override', 'deletion', 'qc_config', 'interval']),
    station: z.string(),
    at: z.string().datetime().openapi({ description: 'When the change entered the archive (qc_config, interval: from when it holds)' }),
    first: z.string().datetime().optional().openapi({ description: 'backfill: its first reading\'s timestamp' }),
    last: z.string().datetime().optional().openapi({ description: 'backfill: its last reading\'s timestamp' }),
    from: z.string().datetime().optional().openapi({ description: 'override, deletion: the range\'s start' }),
    to: z.string().datetime().optional().openapi({ description: 'override, deletion: the range\'s end (inclusive)' }),
    count: z.number().int().optional().openapi({ description: 'backfill, deletion: how many readings' }),
    flag: z.string().optional().openapi({ description: 'override: the flag its readings carry' }),
    reason: z.string().optional().openapi({ description: 'override, deletion: the operator\'s reason; qc_config: the operator\'s reason, when one was given' }),
    config: z.enum(['station', 'default']).optional().openapi({ description: 'qc_config: the station\'s own quality-control configuration from then on, or the defaults again' }),
    interval_seconds: z.number().int().optional().openapi({ description: 'interval: the seconds between two readings the station\'s coverage expects from then on' }),
    previous_interval_seconds: z.number().int().optional().openapi({ description: 'interval: those it expected before' }),
  })
  .openapi('Change');
// What a client of a snapshot's file reads in its headers.
const fileHeaders = {
  'Content-Length': 'The file\'s size, the same on every request',
  ETag: 'A strong tag: "sha256-<hex digest>"',
  'Repr-Digest': 'The file\'s SHA-256 (RFC 9530)',
  'Accept-Ranges': 'bytes',
  'Memento-Datetime': 'The instant the snapshot is as of (RFC 7089)',
};

const addedSchema = z.object({ count: z.number().int(), first: z.string().datetime().nullable(), last: z.string().datetime().nullable() });

const changesQuery = z.object({
  station: stationIdSchema,
  since: z.string().datetime({ offset: true, message: 'must be an ISO 8601 instant, such as 2026-03-01T12:00:00Z' })
    // Changes are recorded to the microsecond: a truncated instant could list others.
    .refine((text) => !finerThanMillisecond(text), finerThanMillisecondReason)
    .openapi({ example: '2026-01-01T00:00:00Z', description: 'List what changed after this instant (ISO 8601, to the millisecond: a digit other than zero below it is a 400); not in the future' }),
});
// Making a snapshot, or comparing one, waited for a slot of its class in vain.
const slotsTaken = {
  description: 'Every one of the SNAPSHOTS_AT_ONCE slots for snapshots made or compared stayed taken for COMPUTED_WAIT_MS',
  headers: { 'Retry-After': 'Seconds until the client may try again' },
};
const idParams = z.object({ id: z.string().openapi({ description: 'The snapshot\'s id, as its creation gave it' }) });

// Enough for any URL of the API: a snapshot request is one URL.
const maxRequestBytes = 16 * 1024;
const idPattern = /^[0-9a-f]{24}$/;
// What a readings URL looks like; its parameters are then held to the endpoint's own rules.
const readingsUrlPattern = /^(https?:\/\/[^/?#\s]+)?\/api\/v1\/data\/(download|historical|aggregate|compare)\/?(\?\S*)?$/;

/**
 * /snapshots/ (citable, byte-identical answers of the readings endpoints under persistent ids) and
 * /data/changes/ (what changed in the archive after an instant). `sources` are the endpoints a snapshot
 * may name, each described by its own concern.
 */
export function addArchiveRoutes(api: Api, sources: readonly SnapshotSource[]): void {
  const { config, db, log } = api.deps;
  // Files of snapshots made before their bytes were kept, being made to be stored: requests for one wait
  // for that one making.
  const making = new Map<string, Promise<void>>();
  const maxBytes = config.snapshotMaxMb * 1024 * 1024;
  // Making a snapshot, or comparing one with the live answer, reads as much as a download does and holds
  // the answer in memory: a slot of its class, per client and in all, taken only when one is made.
  const claimSlot = (ctx: Context) => api.costSlots(ctx, 'snapshot');
  const site = config.baseUrl.replace(/\/api\/v1$/, '');

  const record = (row: SnapshotRow) => {
    const url = snapshotUrl(config.baseUrl, row.id);
    const asOf = snapshotAsOf(row);
    const query = new URLSearchParams(row.query);
    query.append('as_of', asOf.iso);
    query.sort();
    return {
      id: row.id, url, as_of: asOf.iso, query: `${site}${row.path}?${query}`, created_at: new Date(row.created_at).toISOString(),
      citation: snapshotCitationOf(row),
      formats: Object.fromEntries(snapshotFormats.map((format) => [format, { url: `${url}data.${format}`, ...row.files[format]! }])),
    };
  };

  const snapshotOf = async (id: string) => {
    const row = idPattern.test(id) ? await findSnapshot(db, id) : null;
    if (!row) throw notFound(`snapshot '${id}' is unknown`);
    return row;
  };

  addRoute(
    api,
    {
      method: 'post', path: '/api/v1/snapshots/', operationId: 'createSnapshot', tag: 'Snapshots',
      summary: 'Keep a readings query as of now under a persistent id, with its files\' sizes and digests',
      description: 'The body names a URL of /data/download/, /data/historical/, /data/aggregate/ or /data/compare/ with its query (a full URL or its path). The query is normalised (every parameter with its value, defaults written out; `output` is left out, as a snapshot has both formats) and recorded with `as_of`: the URL\'s own `as_of`, else now, once the station\'s writes in flight have committed. The answer is made once to name it: the same query over an unchanged result gives the same snapshot (its first `as_of`), a changed result a new one. 201 in both cases, with `Location`. A URL with `as_of` whose query was kept already as of that instant gives that snapshot without its answer being made again. The files are stored with the snapshot when it is made, and sent as stored ever after. Historical and compare windows end at the snapshot\'s instant. An answer larger than SNAPSHOT_MAX_MB is a 400; a new snapshot that would take this client\'s snapshots of the last 24 hours past SNAPSHOT_QUOTA_MB is a 429, and the store past SNAPSHOT_STORE_MB a 409. Public, and counted by the read rate limit.',
      body: {
        description: 'The readings URL to keep',
        content: {
          'application/json': z.object({
            url: z.string().regex(readingsUrlPattern).openapi({
              example: '/api/v1/data/download/?station=alpine-01&from_date=2026-01-01&to_date=2026-01-31',
              description: 'A URL of /data/download/, /data/historical/, /data/aggregate/ or /data/compare/ with its query, full or from its path',
            }),
          }),
        },
      },
      responses: {
        201: { description: 'The snapshot', content: { 'application/json': snapshotSchema }, headers: { Location: 'The snapshot\'s URL' } },
        400: { description: 'The body is not JSON with a `url`, or the URL is not a readings URL of this API, or one of its parameters is wrong (named as `url: <parameter>`)' },
        404: { description: 'A station of the URL is unknown' },
        409: { description: 'The stored snapshots and this one would be more than SNAPSHOT_STORE_MB (`snapshot-store-full`, with `limit` and `limit_mb`)' },
        429: {
          description: 'This client already has DOWNLOADS_PER_CLIENT (2) snapshots being made or compared, or its snapshots of the last 24 hours and this one would be more than SNAPSHOT_QUOTA_MB (`snapshot-quota-exceeded`, with `limit` and `limit_mb`)',
          headers: { 'Retry-After': 'Seconds until the client may try again; absent when the snapshot alone is more than its quota' },
        },
        503: slotsTaken,
      },
    },
    async (ctx) => {
      const url = await readSnapshotRequest(ctx);
      if (!readingsUrlPattern.test(url)) {
        throw invalidParameters([{ param: 'url', message: 'must be a readings URL of this API: /api/v1/data/download/, /historical/, /aggregate/ or /compare/ with its query' }]);
      }
      const q = parseSnapshotUrl(url, sources);
      // A given as_of is checked as a request's own would be: an instant in the future is a 400.
      const given = q.asOf === undefined ? undefined : instantAsOf('url: as_of', q.asOf);
      await requireStations(db.pool, q.source.stations(q.query));
      const row = (given && await findSnapshotAsOf(db, q, given)) || await makeSnapshot(ctx, q, given);
      ctx.status = 201;
      ctx.set('Location', snapshotUrl(config.baseUrl, row.id));
      ctx.body = record(row);
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/snapshots/:id/', operationId: 'getSnapshot', tag: 'Snapshots', cache: cachePolicy.snapshot,
      summary: 'A snapshot: its query, as_of, citation and files',
      params: idParams,
      responses: {
        200: { description: 'The snapshot', content: { 'application/json': snapshotSchema } },
        404: { description: 'No snapshot has this id' },
      },
    },
    async (ctx, { params }) => {
      ctx.body = record(await snapshotOf(params.id));
    },
  );

  for (const format of snapshotFormats) {
    addRoute(
      api,
      {
        method: 'get', path: `/api/v1/snapshots/:id/data.${format}`, operationId: `getSnapshot${format === 'csv' ? 'Csv' : 'Parquet'}`, tag: 'Snapshots',
        summary: `A snapshot's ${format === 'csv' ? 'CSV' : 'Parquet'} file: the same bytes on every request`,
        description: `Sent as stored when the snapshot was made (a snapshot made before files were stored has its file made again from the archive as of its instant on the first request, and stored only when its SHA-256 is the one recorded: else a 500, never other bytes). \`Content-Length\`, a strong \`ETag\`, \`Repr-Digest\` (RFC 9530), \`Cache-Control: immutable\`, \`If-None-Match\` (304) and byte ranges (\`Range\`: \`a-b\`, \`a-\`, \`-n\`, 206; 416 past the end; \`If-Range\`), so that readers of ${format === 'csv' ? 'CSV' : 'Parquet (pyarrow, polars, DuckDB)'} can read it by its URL.${format === 'csv' ? ' Opened by `# ` comment lines with the licence, the citation, as_of, the zone its timestamps are written in (UTC, or the query\'s `tz` with its offset), the parameters that shape its rows and the time they cover (`all readings up to <as_of>` for a query without dates), then the header row.' : ' The licence, citation, `timezone` (UTC, the instants\'), `buckets_time_zone` (with `tz`), each parameter that shapes its rows under its name, `covers`, as_of and the snapshot\'s URL are in its key-value metadata.'} Snapshots keep the comment lines and metadata they were made with.`,
        params: idParams,
        responses: {
          200: { description: 'The file', content: { [format === 'csv' ? 'text/csv' : parquetType]: z.string().openapi({ format: 'binary' }) }, headers: fileHeaders },
          206: {
            description: 'The byte range asked for', content: { [format === 'csv' ? 'text/csv' : parquetType]: z.string().openapi({ format: 'binary' }) },
            headers: { ...fileHeaders, 'Content-Range': 'The range sent: bytes <first>-<last>/<size>' },
          },
          304: { description: 'If-None-Match names the file\'s ETag: no body', headers: { ETag: fileHeaders.ETag } },
          404: { description: 'No snapshot has this id' },
          416: { description: 'The range starts past the end of the file', headers: { 'Content-Range': 'bytes */<size>' } },
          500: { description: 'A snapshot made before files were stored, whose file made again no longer matches its recorded digest: not sent' },
        },
      },
      async (ctx, { params }) => {
        const row = await snapshotOf(params.id);
        const { bytes: size, sha256 } = row.files[format]!;
        // No download slot: a Parquet reader asks for several ranges at once, each reading only its own
        // chunks (the read rate limit still counts each).
        if (!(await isStored(db, row.id, format, size))) await storeOnce(row, format);
        ctx.set('Content-Disposition', `attachment; filename="envmon_snapshot_${row.id}.${format}"`);
        ctx.set('Link', `<${licenseUrl}>; rel="license"`);
        ctx.set('Memento-Datetime', snapshotAsOf(row).at.toUTCString());
        sendFile(ctx, {
          size, sha256, type: format === 'csv' ? 'text/csv; charset=utf-8' : parquetType,
          read: (start, end, whole) => readStoredFile(db.readPool, row.id, format, start, end, whole ? sha256 : undefined),
        });
      },
    );
  }

  /**
   * Makes a snapshot of `q` (or finds the one of the same result), within the client's slot and the
   * store's limits, each refusal as the problem a client reads.
   */
  async function makeSnapshot(ctx: Context, q: SnapshotQuery, given: AsOf | undefined): Promise<SnapshotRow> {
    const limits: SnapshotLimits = { client: ctx.ip, quotaMb: config.snapshotQuotaMb, storeMb: config.snapshotStoreMb };
    await claimSlot(ctx);
    try {
      // Refused before anything is made when the client or the store is full already.
      await checkSnapshotLimits(db.pool, limits, 0);
      return await createSnapshot(db, config.baseUrl, q, maxBytes, given, limits);
    } catch (error) {
      if (error instanceof SnapshotTooLargeError) {
        throw invalidParameters([{ param: 'url', message: `names more than SNAPSHOT_MAX_MB (${config.snapshotMaxMb}) MiB of data: narrow its range or its stations` }]);
      }
      throw limitProblem(error);
    }
  }

  /**
   * Stores the file of a snapshot made before files were kept, made again from the archive and checked
   * against its digest, once for concurrent requests of this instance (storeMadeFile stores it once
   * whatever the other instances do).
   */
  function storeOnce(row: SnapshotRow, format: SnapshotFormat): Promise<void> {
    const key = `${row.id}.${format}`;
    const pending = making.get(key);
    if (pending) return pending;
    const made = remake(row, format).then((bytes) => storeMadeFile(db, row.id, format, bytes)).finally(() => making.delete(key));
    making.set(key, made);
    return made;
  }

  /** The problem a refusal of the store's limits is. */
  function limitProblem(error: unknown): unknown {
    const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
    if (error instanceof SnapshotQuotaError) {
      // Retry-After when waiting helps: once enough of the client's snapshots of the day have left it.
      return new Problem(429, 'snapshot-quota-exceeded', 'Too Many Requests',
        `this client's snapshots of the last 24 hours hold ${mb(error.usedBytes)}, and SNAPSHOT_QUOTA_MB allows ${error.quotaMb} MiB per client per day${error.neededBytes > 0 ? `: this one needs ${mb(error.neededBytes)}` : ''}`,
        { limit: 'SNAPSHOT_QUOTA_MB', limit_mb: error.quotaMb },
        error.retryAfterSeconds === null ? {} : { 'Retry-After': String(error.retryAfterSeconds) });
    }
    if (error instanceof SnapshotStoreFullError) {
      return new Problem(409, 'snapshot-store-full', 'Conflict',
        `the service's snapshots hold ${mb(error.storedBytes)}, and SNAPSHOT_STORE_MB allows ${error.storeMb} MiB in all${error.neededBytes > 0 ? `: this one needs ${mb(error.neededBytes)}` : ''}; no snapshot can be made until the operator makes room`,
        { limit: 'SNAPSHOT_STORE_MB', limit_mb: error.storeMb });
    }
    return error;
  }

  /**
   * A snapshot's file made again: on a current replica when there is one, else on the primary, and
   * again on the primary when a replica's does not match (it may not yet have replayed the instant).
   */
  async function remake(row: SnapshotRow, format: SnapshotFormat): Promise<Buffer> {
    const bytes = await db.replicas.prefer(({ streamPool }) => remakeFile(streamPool, row, sources, format))
      ?? await remakeFile(db.streamPool, row, sources, format);
    if (bytes) return bytes;
    log.error({ snapshot: row.id, format }, 'a snapshot file made again differs from its recorded digest');
    throw new Problem(500, 'snapshot-differs', 'Internal Server Error', `snapshot ${row.id}'s ${format} file could not be made as it was recorded; it is not sent`);
  }

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/snapshots/:id/changes/', operationId: 'snapshotChanges', tag: 'Snapshots', cache: cachePolicy.live,
      summary: 'Whether the live answer to a snapshot\'s query differs from the snapshot, and what changed since',
      params: idParams,
      responses: {
        200: {
          description: '`differs`: whether the query answered now (with the quality-control configuration and interval in force now) gives another header and rows; `changes`: what changed in its stations and range after its as_of (backfill, override, deletion), and the changes of its stations\' settings its answer depends on, which touch every range (qc_config for downloads, historical windows and aggregates with qc=pass; interval for aggregates); `added`: readings of instants after as_of that arrived since',
          content: { 'application/json': z.object({ id: z.string(), as_of: z.string().datetime(), differs: z.boolean(), changes: z.array(changeSchema), added: addedSchema }) },
        },
        404: { description: 'No snapshot has this id' },
        429: { description: 'This client already has DOWNLOADS_PER_CLIENT (2) snapshots being made or compared' },
        503: slotsTaken,
      },
    },
    async (ctx, { params }) => {
      const row = await snapshotOf(params.id);
      const q = querySnapshot(row, sources);
      const asOf = snapshotAsOf(row);
      await claimSlot(ctx);
      const { changes, added } = await listChanges(db.pool, q.source.stations(q.query), asOf.iso, q.source.span(q.query, asOf), snapshotSettings(row));
      ctx.body = { id: row.id, as_of: asOf.iso, differs: await liveDiffers(db, row, sources, maxBytes), changes, added };
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/changes/', operationId: 'archiveChanges', tag: 'Readings', cache: cachePolicy.live,
      summary: 'What changed in a station\'s archive after an instant: backfills, overrides, deletions, and changes of its quality-control configuration and interval',
      description: 'Oldest first, each with `at`, when it entered the archive. `backfill`: readings of instants up to `since` that arrived after it, per batch; `override`: an operator\'s quality flag for a range, with its reason; `deletion`: readings removed from a range, with its reason; `qc_config`: the station\'s quality-control configuration set (`config`: `station`, its own, or `default`, the defaults again), with the operator\'s reason when given, which changes the QARTOD flags of every range; `interval`: the station\'s reporting interval changed (`interval_seconds`, `previous_interval_seconds`), which changes every aggregate\'s `expected` and `coverage_pct`. `added` counts the readings of instants after `since` that arrived since (the archive growing, which changes no earlier answer). A read as of `since` (`as_of`) gives what the archive held before these changes.',
      query: changesQuery,
      responses: {
        200: {
          description: 'The changes',
          content: { 'application/json': z.object({ station: z.string(), since: z.string().datetime(), changes: z.array(changeSchema), added: addedSchema }).openapi('Changes') },
        },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { query }) => {
      const since = new Date(query.since);
      if (since.getTime() > Date.now()) throw badRequest('since must not be in the future', [{ param: 'since', message: 'must not be in the future' }]);
      await requireStation(db.pool, query.station);
      const { changes, added } = await listChanges(db.pool, [query.station], since.toISOString());
      ctx.body = { station: query.station, since: since.toISOString(), changes, added };
    },
  );
}

/** The `url` of a snapshot request's JSON body (or of its query string). */
async function readSnapshotRequest(ctx: Context): Promise<string> {
  const given = ctx.query.url;
  if (typeof given === 'string' && given !== '') return given;
  const bytes = await readBody(ctx.req, maxRequestBytes).catch((error: Error) => Promise.reject(bodyProblem(error)));
  let body: unknown;
  try {
    body = Bourne.parse(bytes.toString('utf8'), { protoAction: 'error' });
  } catch {
    throw badRequest('the request body must be JSON: {"url": "<a readings URL of this API>"}', [{ param: 'url', message: 'is required' }]);
  }
  const url = (body as { url?: unknown } | null)?.url;
  if (typeof url !== 'string' || url === '') throw badRequest('the request body must name a readings URL of this API as "url"', [{ param: 'url', message: 'is required' }]);
  return url;
}
