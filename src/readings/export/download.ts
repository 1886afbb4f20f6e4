import { PassThrough } from 'node:stream';
import { CopyBinaryReader, type BinaryColumn } from '../../db/copyBinary.js';
import { copyOut, type CopyQuery } from '../../db/copyOut.js';
import type { PgPool } from '../../db/pool.js';
import { parquetStream, type ParquetColumn } from '../../formats/parquet.js';
import type { AsOf } from '../core/asOf.js';
import { aggregateFlagsAt, CsvQcColumns, qcColumnName, qcLookup, qcStreamsIn, type QcLookup } from '../core/qc/columns.js';
import { qcStreams, type QcConfig } from '../core/qc/config.js';
import { readingFields, type QualityFlag } from '../reading.js';

/** The measured fields every download gives, with their names in it, in the order of its columns. */
const downloadFields = readingFields.flatMap((f) => ('download' in f ? [{ column: f.name, name: f.download }] : []));
/** The measured fields `columns=all` adds after them, under their own names. */
const otherFields = readingFields.flatMap((f) => ('download' in f ? [] : [{ column: f.name, name: f.name }]));

/**
 * The columns of a download: the time, the measured fields every download gives, the flag; with `all`,
 * then every other field of a reading (module_data as JSON text).
 */
export const downloadColumns = (all: boolean, qc = false): string[] => {
  const columns = [
    'timestamp_utc', ...downloadFields.map((f) => f.name), 'quality_flag',
    ...(all ? [...otherFields.map((f) => f.name), 'firmware_version', 'module_data'] : []),
  ];
  return qc ? [...columns, ...qcStreamsIn(columns).map((s) => qcColumnName(qcStreams[s]!.stream))] : columns;
};

export type DownloadArgs = {
  stationIds: string[]; from?: string; to?: string; quality?: QualityFlag; withStation: boolean; allColumns?: boolean;
  /** The instant the archive is read as of; the archive as it stands when absent. */
  asOf?: AsOf;
  /** Only readings after this instant (a window such as /data/historical/'s). */
  after?: string;
  /**
   * Each station's quality-control configuration: when given, each metric's aggregate QARTOD flag follows
   * the columns (`<metric>_qc`).
   */
  qc?: Record<string, QcConfig>;
};

/** The range of readings' timestamps a download covers, as the QARTOD flags take it. */
const qcRangeOf = (args: DownloadArgs) => ({
  from: args.from ? `${args.from}T00:00:00Z` : undefined,
  after: args.after,
  to: args.to ? new Date(Date.parse(`${args.to}T00:00:00Z`) + 86_400_000).toISOString() : undefined,
});

const lookupFor = (pool: PgPool, args: DownloadArgs): QcLookup => qcLookup(pool, args.qc!, qcRangeOf(args), args.asOf);

/**
 * firmware_version is the one free text a station writes: in CSV, a value a spreadsheet would run as a
 * formula (starting with =, +, @, a tab or a carriage return) is given behind a single quote, as OWASP
 * advises; Parquet, which no spreadsheet evaluates, has it as stored.
 */
const firmwareColumn = (format: 'csv' | 'binary') => (format === 'csv'
  ? `case when firmware_version ~ '^[=+@\t\r]' then '''' || firmware_version else firmware_version end as firmware_version`
  : 'firmware_version');

/**
 * The query of a download, for COPY as CSV text or in PostgreSQL's binary format (for Parquet): every
 * value has passed its schema first (station ids, dates, an enum).
 */
export function downloadQuery(args: DownloadArgs, format: 'csv' | 'binary' = 'csv'): CopyQuery {
  const values: string[] = [];
  const param = (value: string) => `$${values.push(value)}`;
  const stations = args.stationIds.map(param);
  const where = [`station_id in (${stations.join(', ')})`];
  // Dates are UTC days, whatever the session's zone.
  const start = args.from ? `(${param(args.from)}::date)::timestamp at time zone 'UTC'`
    : args.after ? `${param(args.after)}::timestamptz` : `'-infinity'::timestamptz`;
  const end = args.to ? `(${param(args.to)}::date + 1)::timestamp at time zone 'UTC'` : `'infinity'::timestamptz`;
  if (args.from) where.push(`ts >= ${start}`);
  else if (args.after) where.push(`ts > ${start}`);
  if (args.to) where.push(`ts < ${end}`);
  if (args.quality) where.push(`quality_flag = ${param(args.quality)}`);
  const source = args.asOf
    ? `envmon_readings_as_of(array[${stations.join(', ')}]::text[], ${start}, ${end}, ${param(args.asOf.iso)}::timestamptz)`
    : 'readings';
  const columns = [
    ...(args.withStation ? ['station_id'] : []),
    format === 'csv' ? `to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as timestamp_utc` : 'ts as timestamp_utc',
    ...downloadFields.map((f) => (f.name === f.column ? f.column : `${f.column} as ${f.name}`)), 'quality_flag',
    ...(args.allColumns ? [...otherFields.map((f) => f.column), firmwareColumn(format), 'module_data::text as module_data'] : []),
  ];
  // The primary key (station_id, ts) serves one station in order; several are merged by timestamp.
  const order = args.withStation ? 'ts, station_id' : 'ts';
  return { text: `select ${columns.join(', ')} from ${source} where ${where.join(' and ')} order by ${order}`, values };
}

/** Streams the CSV rows of a download after `preamble`, straight from PostgreSQL's COPY. */
export async function streamDownload(pool: PgPool, args: DownloadArgs, preamble: string): Promise<PassThrough | CsvQcColumns> {
  if (args.qc) {
    // Each station's flags are read window by window along the rows as COPY writes them.
    const streams = qcStreamsIn(downloadColumns(Boolean(args.allColumns)));
    const body = new CsvQcColumns(lookupFor(pool, args), streams, args.withStation, args.stationIds[0]!);
    body.push(preamble);
    return copyOut(pool, downloadQuery(args), 'csv', body);
  }
  const body = new PassThrough();
  body.write(preamble);
  return copyOut(pool, downloadQuery(args), 'csv', body);
}

/** The columns of a Parquet download: every column of the CSV's `columns=all`, typed; the flags when `qc`. */
export const parquetDownloadColumns = (withStation: boolean, qc = false): ParquetColumn[] => [
  ...(withStation ? [{ name: 'station_id', kind: 'string', required: true } as const] : []),
  { name: 'timestamp_utc', kind: 'timestamp', required: true },
  ...downloadFields.map((f) => ({ name: f.name, kind: 'double' } as const)),
  { name: 'quality_flag', kind: 'string', required: true },
  ...otherFields.map((f) => ({ name: f.name, kind: 'double' } as const)),
  { name: 'firmware_version', kind: 'string' },
  { name: 'module_data', kind: 'string' },
  ...(qc ? qcStreamsIn(downloadColumns(true)).map((s) => ({ name: qcColumnName(qcStreams[s]!.stream), kind: 'int32', required: true } as const)) : []),
];

/** The aggregate flags of a batch of a Parquet download's rows, one column per metric. */
async function flagColumns(lookup: QcLookup, batch: { rows: number; columns: unknown[][] }, args: DownloadArgs): Promise<number[][]> {
  const streams = qcStreamsIn(downloadColumns(true));
  const out = streams.map(() => new Array<number>(batch.rows));
  const times = batch.columns[args.withStation ? 1 : 0] as bigint[];
  for (let i = 0; i < batch.rows; i++) {
    const station = args.withStation ? (batch.columns[0]![i] as string) : args.stationIds[0]!;
    const found = aggregateFlagsAt(lookup, station, Number(times[i]!) / 1000, streams);
    const flags = Array.isArray(found) ? found : await found;
    for (let s = 0; s < streams.length; s++) out[s]![i] = flags[s]!;
  }
  return out;
}

// Rows per row group (about three weeks of one-minute readings): encoding a row group holds the event
// loop, so groups are kept this small; twice as many rows made a file only a little smaller (bench/parquet).
const rowGroupRows = 32_768;

/**
 * Streams a download as a Parquet file, row group by row group as the binary COPY delivers the rows,
 * with `metadata` (licence, citation) in the file's key-value metadata. A client gone stops the COPY.
 */
export async function streamParquetDownload(pool: PgPool, args: DownloadArgs, metadata: Record<string, string>): Promise<PassThrough> {
  const columns = parquetDownloadColumns(args.withStation, Boolean(args.qc));
  const read = parquetDownloadColumns(args.withStation);
  const types = read.map((c): BinaryColumn => (c.kind === 'timestamp' ? 'timestamptz' : c.kind === 'double' ? 'float8' : 'text'));
  const lookup = args.qc ? lookupFor(pool, args) : null;
  const rows = await copyOut(pool, downloadQuery({ ...args, allColumns: true }, 'binary'), 'binary', new CopyBinaryReader(types, rowGroupRows));
  const file = parquetStream(columns, metadata);
  file.body.on('close', () => rows.destroy());
  void (async () => {
    try {
      for await (const batch of rows) await file.write(lookup ? [...batch.columns, ...(await flagColumns(lookup, batch, args))] : batch.columns);
      await file.end();
    } catch (error) {
      file.body.destroy(error as Error);
    }
  })();
  return file.body;
}
