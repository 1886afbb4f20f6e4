import type pg from 'pg';
import { float8Array, timestampArray } from '../../../db/binaryArrays.js';
import { CopyFloatReader, type FloatBatch } from '../../../db/copyBinary.js';
import type { CopyQuery } from '../../../db/copyOut.js';
import { copyStatement } from '../../../db/copyOut.js';
import { readCopyRow } from '../../../db/copyRow.js';
import type { AsOf } from '../asOf.js';
import { to as copyTo } from 'pg-copy-streams';
import { qcStreams, type QcConfig } from './config.js';
import { lookBack, SeriesFlagger, type KeptTests, type MetricFlags, type SeriesContext } from './flagger.js';
import { wholeSeriesFacts, type SeriesSpacings } from './spacings.js';
import { readingsSource } from '../readingsSource.js';

/** A range of readings' timestamps (ISO instants): from `from` (or after `after`) up to `to`, exclusive. */
export type QcRange = { from?: string; after?: string; to?: string };

/** The first reading after a range: its time (ms) and its values of the metrics flagged. */
export type NextReading = { time: number; values: Float64Array };

/** What flagging a station's range needs besides its rows: the flagger, ready for the range's first reading, and the reading after the range. */
export type SeriesStart = { flagger: SeriesFlagger; after: NextReading | null };

/** Builds a statement's text with its bind parameters numbered as they are added. */
class Statement {
  readonly values: string[] = [];
  param(value: string): string {
    return `$${this.values.push(value)}`;
  }
}

/** Where a station's readings come from: the table, or the archive as it stood at `asOf`. */
function sourceOf(statement: Statement, stationId: string, asOf: AsOf | undefined): string {
  const station = statement.param(stationId);
  return `${readingsSource(asOf && statement.param(asOf.iso), `array[${station}]::text[]`)} where r.station_id = ${station}`;
}

/** The range's bounds as SQL conditions on r.ts. */
function bounds(statement: Statement, range: QcRange): { lower: string; upper: string } {
  return {
    lower: range.from ? `r.ts >= ${statement.param(range.from)}::timestamptz` : range.after ? `r.ts > ${statement.param(range.after)}::timestamptz` : 'true',
    upper: range.to ? `r.ts < ${statement.param(range.to)}::timestamptz` : 'true',
  };
}

const valueColumns = (fields: readonly number[]) => fields.map((f, i) => `r.${qcStreams[f]!.field}::float8 as v${i}`);
const aggregated = (fields: readonly number[]) => `array_agg(ts) as ts${fields.map((_, i) => `, array_agg(v${i}) as v${i}`).join('')}`;

/** A statement's one row, each column an array (timestamps as milliseconds, doubles NaN for NULL), read on `client`. */
async function readColumns(client: pg.ClientBase, query: CopyQuery, columns: number): Promise<Float64Array[]> {
  const row = await readCopyRow(client, query);
  return Array.from({ length: columns }, (_, c) => {
    const bytes = row?.[c];
    if (!bytes) return new Float64Array(0);
    return c === 0 ? timestampArray(bytes).map((us) => us / 1000) : float8Array(bytes);
  });
}

/** The first reading after the range (one at or after `range.to`), when the range has an end. */
async function readAfter(client: pg.ClientBase, stationId: string, fields: readonly number[], range: QcRange, asOf: AsOf | undefined): Promise<NextReading | null> {
  if (!range.to) return null;
  const statement = new Statement();
  const text = `select ${aggregated(fields)} from (
      select r.ts, ${valueColumns(fields).join(', ')} from ${sourceOf(statement, stationId, asOf)} and not (${bounds(statement, { to: range.to }).upper}) order by r.ts limit 1) n`;
  const [time, ...values] = await readColumns(client, { text, values: statement.values }, 1 + fields.length);
  return time!.length ? { time: time![0]!, values: Float64Array.from(values, (v) => v[0]!) } : null;
}

/** The readings just before the range: `count` of them at most, oldest first. */
async function readContext(client: pg.ClientBase, stationId: string, fields: readonly number[], range: QcRange, asOf: AsOf | undefined, count: number): Promise<SeriesContext> {
  const statement = new Statement();
  const { lower } = bounds(statement, range);
  const text = `select ${aggregated(fields)} from (
      select * from (select r.ts, ${valueColumns(fields).join(', ')} from ${sourceOf(statement, stationId, asOf)} and not (${lower}) order by r.ts desc limit ${count}) b
      order by ts) b`;
  const [times, ...values] = await readColumns(client, { text, values: statement.values }, 1 + fields.length);
  return { times: times!, values };
}

/**
 * Reads, on `client` (inside one snapshot with the rows to be flagged), what flagging the station's
 * readings in `range` takes besides those rows: the whole series' facts (kept by `spacings` between
 * reads), the readings before the range the tests look back over, and the reading after it. `fields`
 * are the metrics to flag, as indexes into qcStreams.
 */
export async function readSeriesStart(
  client: pg.ClientBase, stationId: string, config: QcConfig, fields: readonly number[], range: QcRange, asOf?: AsOf, spacings?: SeriesSpacings,
): Promise<SeriesStart> {
  const facts = spacings ? await spacings.factsOf(client, stationId, asOf) : await wholeSeriesFacts(client, stationId, asOf);
  const after = await readAfter(client, stationId, fields, range, asOf);
  const context = await readContext(client, stationId, fields, range, asOf, lookBack(config, facts.interval));
  return { flagger: new SeriesFlagger(config, fields, facts, context), after };
}

/** A batch of a station's readings in time order, with their values of the metrics flagged and their flags. */
export type FlaggedBatch = { times: Float64Array; values: Float64Array[]; flags: MetricFlags[] };

// Rows per batch of a read flagged in one pass, and batches read ahead while one is flagged: a few MB of
// typed arrays, and the database and the flagging side by side (bench/quality).
const batchRows = 16_384;
const batchesAhead = 4;

/**
 * The station's readings in `range`, in time order, with their flags for `fields` (indexes into
 * qcStreams: the aggregate, and the tests' own in `kept`), batch by batch: one pass over the rows on `client`, which should hold one snapshot for
 * this and readSeriesStart (readInOneSnapshot). Each reading waits for the next to be read, which its
 * spike test looks at; the last takes the reading after the range.
 */
export async function* flaggedReadings(
  client: pg.ClientBase, stationId: string, config: QcConfig, fields: readonly number[], range: QcRange,
  options: { asOf?: AsOf; spacings?: SeriesSpacings; kept?: KeptTests } = {},
): AsyncGenerator<FlaggedBatch> {
  const { asOf, spacings, kept = [] } = options;
  const { flagger, after } = await readSeriesStart(client, stationId, config, fields, range, asOf, spacings);
  const statement = new Statement();
  const source = sourceOf(statement, stationId, asOf);
  const { lower, upper } = bounds(statement, range);
  const text = `select r.ts, ${valueColumns(fields).join(', ')} from ${source} and ${lower} and ${upper} order by r.ts`;
  const copy = client.query(copyTo(copyStatement(client, { text, values: statement.values }, 'binary')));
  const rows = new CopyFloatReader(fields.length, batchRows, batchesAhead);
  // pipe() passes no error on: a COPY that fails ends the read with its error.
  copy.on('error', (error) => rows.destroy(error));
  copy.pipe(rows);
  let held: FloatBatch | null = null;
  for await (const batch of rows as AsyncIterable<FloatBatch>) {
    if (held) yield flagHeld(flagger, held, batch.times[0]!, batch.columns.map((c) => c[0]!), kept);
    held = batch;
  }
  if (held) yield flagHeld(flagger, held, after?.time ?? NaN, fields.map((_, i) => after?.values[i] ?? NaN), kept);
}

/** A batch's flags, its last reading followed by the reading at `nextTime` (NaN: none). */
function flagHeld(flagger: SeriesFlagger, batch: FloatBatch, nextTime: number, nextValues: number[], kept: KeptTests): FlaggedBatch {
  const flags = flagger.flag({ times: batch.times, values: batch.columns, after: { time: nextTime, values: nextValues } }, kept);
  return { times: batch.times, values: batch.columns, flags };
}
