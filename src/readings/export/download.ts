import { PassThrough } from 'node:stream';
import { CopyBinaryReader, type BinaryColumn, type ColumnBatch, type ColumnValues } from '../../db/copyBinary.js';
import { copyOut, type CopyQuery } from '../../db/copyOut.js';
import type { PgPool } from '../../db/pool.js';
import { parquetStream, type ParquetColumn } from '../../formats/parquet.js';
import type { AsOf } from '../core/asOf.js';
import {
  CsvQcColumns, prefixWidth, qcColumnName, qcPrefixColumns, qcStreamsIn, readStarts, RowFlagging, type FlaggedBatch, type QcPrefix, type RowBatch,
} from '../core/qc/columns.js';
import { qcStreams, type QcConfig } from '../core/qc/config.js';
import type { SeriesStart } from '../core/qc/series.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';
import { readingFields, type QualityFlag } from '../reading.js';
import { readingsSource } from '../core/readingsSource.js';

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
  /** The stations' series facts kept between reads (flagging reads the whole series' otherwise). */
  spacings?: SeriesSpacings;
};

/** The range of readings' timestamps a download covers, as the QARTOD flags take it. */
const qcRangeOf = (args: DownloadArgs) => ({
  from: args.from ? `${args.from}T00:00:00Z` : undefined,
  after: args.after,
  to: args.to ? new Date(Date.parse(`${args.to}T00:00:00Z`) + 86_400_000).toISOString() : undefined,
});

/**
 * What a flagged download's rows carry before their own columns: a quality filter is applied after
 * flagging, and a download of several stations gives each row its successor (QcPrefix).
 */
const qcPrefixOf = (args: DownloadArgs, fields: readonly number[]): QcPrefix => ({ keep: Boolean(args.quality), lead: args.withStation, fields });

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
export function downloadQuery(args: DownloadArgs, format: 'csv' | 'binary' = 'csv', qc?: QcPrefix): CopyQuery {
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
  // Flagged, every reading is read (each is the neighbour of another), and those the filter leaves out are dropped after.
  const quality = args.quality ? `quality_flag = ${param(args.quality)}` : null;
  if (quality && !qc) where.push(quality);
  const source = readingsSource(args.asOf && param(args.asOf.iso), `array[${stations.join(', ')}]::text[]`, start, end);
  const columns = [
    ...(qc ? qcPrefixColumns(qc, quality ?? undefined) : []),
    ...(args.withStation ? ['station_id'] : []),
    format === 'csv' ? `to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as timestamp_utc` : 'ts as timestamp_utc',
    ...downloadFields.map((f) => (f.name === f.column ? f.column : `${f.column} as ${f.name}`)), 'quality_flag',
    ...(args.allColumns ? [...otherFields.map((f) => f.column), firmwareColumn(format), 'module_data::text as module_data'] : []),
  ];
  // The primary key (station_id, ts) serves one station in order; several are merged by timestamp.
  const order = args.withStation ? 'ts, station_id' : 'ts';
  const window = qc?.lead ? ' window w as (partition by station_id order by ts)' : '';
  return { text: `select ${columns.join(', ')} from ${source} where ${where.join(' and ')}${window} order by ${order}`, values };
}

/**
 * Streams the CSV rows of a download after `preamble`, straight from PostgreSQL's COPY. With flags, the
 * stations' series facts and the readings before the range are read first on the COPY's connection, in
 * one snapshot with the rows, and each row is flagged as it passes.
 */
export async function streamDownload(pool: PgPool, args: DownloadArgs, preamble: string): Promise<PassThrough | CsvQcColumns> {
  if (args.qc) {
    const columns = [...(args.withStation ? ['station_id'] : []), ...downloadColumns(Boolean(args.allColumns))];
    const fields = qcStreamsIn(columns);
    const prefix = qcPrefixOf(args, fields);
    const body = new CsvQcColumns({
      ...prefix, withStation: args.withStation, stationId: args.stationIds[0]!,
      valueFields: fields.map((f) => columns.indexOf(qcStreams[f]!.stream)),
    });
    body.push(preamble);
    const qc = args.qc;
    return copyOut(pool, downloadQuery(args, 'csv', prefix), 'csv', body, async (client) => body.start(await readStarts(client, qc, fields, qcRangeOf(args), args.asOf, args.spacings)));
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

// Rows per row group (about three weeks of one-minute readings): encoding a row group holds the event
// loop, so groups are kept this small; twice as many rows made a file only a little smaller (bench/parquet).
const rowGroupRows = 32_768;

/**
 * Streams a download as a Parquet file, row group by row group as the binary COPY delivers the rows,
 * with `metadata` (licence, citation) in the file's key-value metadata. A client gone stops the COPY.
 * With flags (always, but in snapshots made before them), as streamDownload flags a CSV's rows.
 */
export async function streamParquetDownload(pool: PgPool, args: DownloadArgs, metadata: Record<string, string>): Promise<PassThrough> {
  const columns = parquetDownloadColumns(args.withStation, Boolean(args.qc));
  const read = parquetDownloadColumns(args.withStation);
  const fields = qcStreamsIn(downloadColumns(true));
  const prefix = args.qc ? qcPrefixOf(args, fields) : undefined;
  const prefixTypes: BinaryColumn[] = Array.from({ length: prefix ? prefixWidth(prefix) : 0 }, () => 'float8');
  const types = [...prefixTypes, ...read.map((c): BinaryColumn => (c.kind === 'timestamp' ? 'timestamptz' : c.kind === 'double' ? 'float8' : 'text'))];
  const flagged: { flags?: ParquetFlags } = {};
  const qc = args.qc;
  const rows = await copyOut(pool, downloadQuery({ ...args, allColumns: true }, 'binary', prefix), 'binary', new CopyBinaryReader(types, rowGroupRows),
    qc && prefix ? async (client) => {
      flagged.flags = new ParquetFlags(await readStarts(client, qc, fields, qcRangeOf(args), args.asOf, args.spacings), prefix, read, args.stationIds[0]!);
    } : undefined);
  const file = parquetStream(columns, metadata);
  file.body.on('close', () => rows.destroy());
  void (async () => {
    try {
      const { flags } = flagged;
      for await (const batch of rows as AsyncIterable<ColumnBatch>) {
        for (const group of flags ? flags.take(batch) : [batch.columns]) await file.write(group);
      }
      for (const group of flags ? flags.finish() : []) await file.write(group);
      await file.end();
    } catch (error) {
      file.body.destroy(error as Error);
    }
  })();
  return file.body;
}

/**
 * A Parquet download's row groups with their flags: each batch of rows as COPY gives it (the prefix
 * columns first), flagged, less the prefix and the rows a quality filter leaves out. Without lead a
 * batch waits for the next (RowFlagging): the row groups keep the size they have without flags.
 */
class ParquetFlags {
  private readonly flagging: RowFlagging<ColumnBatch>;
  private readonly width: number;
  private readonly valueColumns: number[];
  private readonly timeColumn: number;

  constructor(starts: Map<string, SeriesStart>, private readonly prefix: QcPrefix, read: ParquetColumn[], stationId: string) {
    this.width = prefixWidth(prefix);
    this.flagging = new RowFlagging(starts, stationId);
    this.timeColumn = this.width + read.findIndex((c) => c.name === 'timestamp_utc');
    this.valueColumns = prefix.fields.map((f) => this.width + read.findIndex((c) => c.name === qcStreams[f]!.stream));
  }

  /** The row groups that can be written now, each its columns with the flags after them. */
  take(batch: ColumnBatch): ColumnValues[][] {
    return this.flagging.take(this.rows(batch)).map((f) => this.group(f));
  }

  finish(): ColumnValues[][] {
    return this.flagging.finish().map((f) => this.group(f));
  }

  private rows(batch: ColumnBatch): RowBatch<ColumnBatch> {
    // Plain loops: a typed array's from() with a mapping function walks an iterator per value.
    const doubles = (column: ColumnValues) => {
      const out = new Float64Array(column.length);
      for (let i = 0; i < column.length; i++) out[i] = (column[i] as number | null) ?? NaN;
      return out;
    };
    const micros = batch.columns[this.timeColumn] as bigint[];
    const times = new Float64Array(micros.length);
    for (let i = 0; i < micros.length; i++) times[i] = Number(micros[i]!) / 1000;
    const lead = this.prefix.keep ? 1 : 0;
    return {
      times, values: this.valueColumns.map((c) => doubles(batch.columns[c]!)), payload: batch,
      ...(this.prefix.lead ? {
        stations: batch.columns[this.width] as string[],
        next: { times: doubles(batch.columns[lead]!), values: this.prefix.fields.map((_, m) => doubles(batch.columns[lead + 1 + m]!)) },
      } : {}),
    };
  }

  /** A batch's columns without the prefix and the rows left out, with each metric's flags after them. */
  private group({ batch: { payload }, flags }: FlaggedBatch<ColumnBatch>): ColumnValues[] {
    const keep = this.prefix.keep ? payload.columns[0]! : null;
    const kept = (column: ColumnValues) => (keep ? column.filter((_, i) => keep[i] === 1) : column);
    const numbers = (flags: Uint8Array) => {
      const out = new Array<number>(flags.length);
      for (let i = 0; i < flags.length; i++) out[i] = flags[i]!;
      return out;
    };
    return [...payload.columns.slice(this.width).map(kept), ...flags.map((f) => kept(numbers(f.aggregate)))];
  }
}
