import type { AsOf } from '../core/asOf.js';
import { historicalQuerySchema, type HistoricalQuery } from '../core/params.js';
import { historicalRequest } from '../core/historicalRequest.js';
import { anySource, collect, csvRecords, daysSpan, type Pinned, type SnapshotSource } from '../core/snapshotSource.js';
import { qcConfigsOf } from '../core/qc/config.js';
import { downloadColumns, streamDownload, streamParquetDownload, type DownloadArgs } from './download.js';
import { downloadRequest } from './requests.js';
import { downloadErrors, downloadQuerySchema, type DownloadQuery } from './schema.js';

/** A readings file's CSV (header row and rows) and Parquet file, for a snapshot of the readings `args` names. */
function readingsFiles<Q>(args: (query: Q, asOf: AsOf, pinned: Pinned) => DownloadArgs): Pick<SnapshotSource<Q>, 'csv' | 'parquet'> {
  return {
    csv: async (pool, query, asOf, pinned, maxBytes) => {
      const download = args(query, asOf, pinned);
      // Flags only when the query asks for them (a snapshot made before they existed pinned none).
      if (!(query as { qc?: boolean }).qc) delete download.qc;
      const header = [...(download.withStation ? ['station_id'] : []), ...downloadColumns(Boolean(download.allColumns), Boolean(download.qc))].join(',') + '\n';
      const bytes = await collect(await streamDownload(pool, download, header), maxBytes);
      return { bytes, rows: csvRecords(bytes) };
    },
    parquet: async (pool, query, asOf, pinned, metadata, maxBytes) =>
      collect(await streamParquetDownload(pool, args(query, asOf, pinned), metadata), maxBytes),
  };
}

const stationsOf = (query: DownloadQuery, defaultStation: string | undefined) => query.stations ?? [query.station ?? defaultStation ?? ''];

/** /data/download/: the readings of one station or several over whole UTC days. */
export function downloadSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  const requestOf = (query: DownloadQuery) => downloadRequest(query, stationsOf(query, defaultStation));
  return anySource<DownloadQuery>({
    ...readingsFiles<DownloadQuery>((query, asOf, pinned) => requestOf(query).args(asOf, pinned.qc)),
    path: '/api/v1/data/download/',
    schema: downloadQuerySchema(defaultStation),
    checks: downloadErrors,
    stations: (query) => requestOf(query).stationIds,
    span: (query) => daysSpan(query.from_date, query.to_date),
    describe: (query, asOf) => requestOf(query).describe(asOf.iso),
    facts: (query, asOf) => requestOf(query).facts(asOf.iso),
    // The stations' quality-control configurations: a Parquet file carries their flags.
    pin: async (pool, query, asOf) => ({ qc: await qcConfigsOf(pool, requestOf(query).stationIds, asOf.iso) }),
  });
}

/** /data/historical/: a station's readings in the hours before the instant, every column. */
export function historicalSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  const requestOf = (query: HistoricalQuery) => historicalRequest(query, query.station ?? defaultStation ?? '');
  // The window ends at the instant the snapshot was made, also when its query is answered as of another.
  const windowEndOf = (asOf: AsOf, pinned: Pinned) => pinned.windowEnd ?? asOf.iso;
  return anySource<HistoricalQuery>({
    ...readingsFiles<HistoricalQuery>((query, asOf, pinned) => {
      const request = requestOf(query);
      return {
        stationIds: [request.stationId], quality: query.quality, withStation: false, allColumns: true, asOf,
        after: request.windowStart(windowEndOf(asOf, pinned)), qc: pinned.qc,
      };
    }),
    path: '/api/v1/data/historical/',
    schema: historicalQuerySchema(defaultStation),
    stations: (query) => [requestOf(query).stationId],
    span: (query, asOf) => ({ start: requestOf(query).windowStart(asOf.iso), end: null }),
    describe: (query) => requestOf(query).describe(),
    facts: (query, asOf, pinned) => requestOf(query).facts(windowEndOf(asOf, pinned)),
    pin: async (pool, query, asOf) => ({ windowEnd: asOf.iso, qc: await qcConfigsOf(pool, [requestOf(query).stationId], asOf.iso) }),
  });
}
