import type { AsOf } from '../core/asOf.js';
import { historicalQuerySchema, type HistoricalQuery } from '../core/params.js';
import { describeRange } from '../core/attribution.js';
import { anySource, collect, csvRecords, daysSpan, type Pinned, type SnapshotSource } from '../core/snapshotSource.js';
import { qcConfigsOf } from '../core/qc/config.js';
import { downloadColumns, streamDownload, streamParquetDownload, type DownloadArgs } from './download.js';
import { downloadErrors, downloadQuerySchema, type DownloadQuery } from './schema.js';

const stationsWord = (ids: string[]) => `station${ids.length > 1 ? 's' : ''} ${ids.join(', ')}`;

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

const downloadArgs = (query: DownloadQuery, asOf: AsOf, pinned: Pinned, defaultStation: string | undefined): DownloadArgs => ({
  stationIds: stationsOf(query, defaultStation), from: query.from_date, to: query.to_date, quality: query.quality,
  withStation: Boolean(query.stations), allColumns: query.columns === 'all', asOf, qc: pinned.qc,
});
const stationsOf = (query: DownloadQuery, defaultStation: string | undefined) => query.stations ?? [query.station ?? defaultStation ?? ''];

/** /data/download/: the readings of one station or several over whole UTC days. */
export function downloadSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  return anySource<DownloadQuery>({
    ...readingsFiles<DownloadQuery>((query, asOf, pinned) => downloadArgs(query, asOf, pinned, defaultStation)),
    path: '/api/v1/data/download/',
    schema: downloadQuerySchema(defaultStation),
    checks: downloadErrors,
    stations: (query) => stationsOf(query, defaultStation),
    span: (query) => daysSpan(query.from_date, query.to_date),
    describe: (query) => `readings of ${stationsWord(stationsOf(query, defaultStation))} ${describeRange({ from: query.from_date, to: query.to_date })}`,
    // The stations' quality-control configurations: a Parquet file carries their flags.
    pin: async (pool, query, asOf) => ({ qc: await qcConfigsOf(pool, stationsOf(query, defaultStation), asOf.iso) }),
  });
}

// The window ends at the instant the snapshot was made, also when its query is answered as of another.
const windowStart = (query: HistoricalQuery, end: string) => new Date(Date.parse(end) - query.hours * 3_600_000).toISOString();
const historicalArgs = (query: HistoricalQuery, asOf: AsOf, pinned: Pinned, defaultStation: string | undefined): DownloadArgs => ({
  stationIds: [query.station ?? defaultStation ?? ''], quality: query.quality, withStation: false, allColumns: true, asOf,
  after: windowStart(query, pinned.windowEnd ?? asOf.iso), qc: pinned.qc,
});

/** /data/historical/: a station's readings in the hours before the instant, every column. */
export function historicalSnapshotSource(defaultStation: string | undefined): SnapshotSource {
  return anySource<HistoricalQuery>({
    ...readingsFiles<HistoricalQuery>((query, asOf, pinned) => historicalArgs(query, asOf, pinned, defaultStation)),
    path: '/api/v1/data/historical/',
    schema: historicalQuerySchema(defaultStation),
    stations: (query) => [query.station ?? defaultStation ?? ''],
    span: (query, asOf) => ({ start: windowStart(query, asOf.iso), end: null }),
    describe: (query) => `readings of station ${query.station ?? defaultStation} in the ${query.hours} hours before the instant cited`,
    pin: async (pool, query, asOf) => ({ windowEnd: asOf.iso, qc: await qcConfigsOf(pool, [query.station ?? defaultStation ?? ''], asOf.iso) }),
  });
}
