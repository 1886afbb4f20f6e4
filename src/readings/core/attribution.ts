import type { Context } from 'koa';
import type { AsOf } from './asOf.js';
import type { AggregatePeriod } from './params.js';

export const licenseUrl = 'https://creativecommons.org/licenses/by/4.0/';

type Range = { from?: string; to?: string };

/**
 * What a file holds: the raw readings, their aggregates over a period (of a zone's calendar, `tz`), or a
 * metric's profile over the slots of a zone's calendar.
 */
export type Dataset = { kind: 'readings' } | { kind: 'aggregate'; period: AggregatePeriod; tz?: string } | { kind: 'profile'; by: string; param: string; tz: string };

/** A file's dataset in words, and the endpoint it comes from. */
function datasetWords(dataset: Dataset): { what: string; endpoint: string } {
  switch (dataset.kind) {
    case 'readings': return { what: 'readings', endpoint: 'download' };
    case 'aggregate': return { what: `${periodAdjective[dataset.period]} aggregates${dataset.tz ? ` (${dataset.tz} time)` : ''} of readings`, endpoint: 'aggregate' };
    case 'profile': return { what: `${dataset.by.replaceAll('_', ' ')} profile of ${dataset.param} (${dataset.tz} time) of readings`, endpoint: 'profile' };
  }
}

export const periodAdjective: Record<AggregatePeriod, string> = { hour: 'hourly', day: 'daily', week: 'weekly', month: 'monthly' };

/**
 * A range of dates in words: "from A to B", "up to B", "full history". With `upTo` (the instant the
 * archive is read as of) an open end is that instant: "from A up to T", "up to T".
 */
export const describeRange = ({ from, to }: Range, upTo?: string) =>
  from && to ? `from ${from} to ${to}`
    : from ? (upTo ? `from ${from} up to ${upTo}` : `from ${from} onwards`)
      : to ? `up to ${to}` : upTo ? `up to ${upTo}` : 'full history';

/** The time a range of dates (of `zone`'s calendar, UTC's when absent) covers, read as of `upTo`, for AnswerFacts. */
export const coveredDates = (range: Range, upTo: string, zone?: string) =>
  range.from || range.to ? `${describeRange(range, upTo)} (${zone ?? 'UTC'} dates)` : `all readings up to ${upTo}`;

const stationsWords = (stationIds: readonly string[]) => `station${stationIds.length > 1 ? 's' : ''} ${stationIds.join(', ')}`;

/** A file's data in words, for a snapshot's citation: "hourly aggregates (Europe/Zurich time) of readings of station X from A to B". */
export const describeData = (stationIds: readonly string[], range: Range, dataset: Dataset, upTo?: string) =>
  `${datasetWords(dataset).what} of ${stationsWords(stationIds)} ${describeRange(range, upTo)}`;

/**
 * The citation a user of the data should give; sent as X-Attribution and in the CSV preamble. A read as
 * of an instant names it: the same citation then names the same data. `query` (the request's parameters,
 * less `output`, which changes the file and not the data) ends the address it was retrieved from, so
 * that a reader can ask for it again.
 */
export function citation(baseUrl: string, stationIds: string[], range: Range, dataset: Dataset = { kind: 'readings' }, asOf?: AsOf, query = ''): string {
  const retrieved = new Date().toISOString().slice(0, 10);
  const { what, endpoint } = datasetWords(dataset);
  const params = query.split('&').filter((param) => param !== '' && !param.startsWith('output='));
  const asked = params.length > 0 ? `?${params.join('&')}` : '';
  return `envmon environmental monitoring network, ${stationsWords(stationIds)}, ` +
    `${what} ${describeRange(range)}${asOf ? ` as of ${asOf.iso}` : ''}, retrieved ${retrieved} from ${baseUrl}/data/${endpoint}/${asked}. Licensed CC BY 4.0.`;
}

/**
 * What a file says about its rows beside them: the zone its timestamps are written in, the parameters
 * that shaped the rows, and the time they cover. One endpoint's mapping gives them for its live answer
 * and its snapshot alike.
 */
export type AnswerFacts = {
  /** The zone of the timestamps (with their offset) and of the buckets; UTC when absent. */
  zone?: string;
  /** The parameters that shaped the rows beside the zone and the range, as the query names and writes them. */
  params: [string, string][];
  /** The time the rows cover, in words: "from 2026-01-01 to 2026-01-31 (Europe/Zurich dates)". */
  covers: string;
};

/** The parameters given, as AnswerFacts names them (a list comma-separated, as the query writes it); those not given are left out. */
export const givenParams = (params: [string, string | number | boolean | readonly (string | number)[] | undefined][]): [string, string][] =>
  params.flatMap(([name, value]) => (value === undefined ? [] : [[name, Array.isArray(value) ? value.join(',') : String(value)] as [string, string]]));

/** The comment line saying how a CSV file writes its timestamps and missing values. */
export const timestampsLine = (zone?: string) =>
  zone ? `# Timestamps are ${zone} time, with its UTC offset. Empty fields are missing values.` : `# Timestamps are UTC. Empty fields are missing values.`;

/** The comment lines of a CSV file that say what its rows are: their zone, parameters and time covered. */
export const factLines = (facts: AnswerFacts): string[] => [
  timestampsLine(facts.zone),
  ...(facts.params.length > 0 ? [`# Parameters: ${facts.params.map(([name, value]) => `${name}=${value}`).join(', ')}`] : []),
  `# Covers: ${facts.covers}.`,
];

/**
 * The same as Parquet key-value metadata: the instants of a Parquet file are UTC whatever the zone,
 * which `buckets_time_zone` names; each parameter under its own name.
 */
export const factMetadata = (facts: AnswerFacts): [string, string][] => [
  ['timezone', 'UTC'],
  ...(facts.zone ? [['buckets_time_zone', facts.zone] as [string, string]] : []),
  ...facts.params,
  ['covers', facts.covers],
];

export type FileFormat = 'csv' | 'parquet';

/**
 * The key-value metadata of every Parquet file: what a CSV file says in its comment lines, the licence
 * and the citation, under keys a reader can look up.
 */
export const parquetMetadata = (cite: string, asOf?: AsOf, zone?: string): Record<string, string> => ({
  license: licenseUrl,
  citation: cite,
  timezone: 'UTC',
  ...(asOf ? { as_of: asOf.iso } : {}),
  // The instants stay UTC; the buckets they start are of this zone's calendar.
  ...(zone ? { buckets_time_zone: zone } : {}),
});

/** The comment lines and header row that open every CSV file of readings or aggregates (`zone`: of that zone's calendar). */
export function preamble(cite: string, columns: readonly string[], zone?: string): string {
  return [
    `# Data licensed under Creative Commons Attribution 4.0 International (CC BY 4.0): ${licenseUrl}`,
    `# Cite as: ${cite}`,
    timestampsLine(zone),
    columns.join(','),
  ].join('\n') + '\n';
}

/**
 * One naming scheme for every file: envmon_<station or N-stations>_<from or start>_<to or latest>.csv,
 * with the period appended for aggregates (…_daily.csv), so that files of one request sort together;
 * a Parquet file has the same name ending in .parquet.
 */
export function downloadFileName(stationIds: string[], { from, to }: Range, dataset: Dataset = { kind: 'readings' }, format: FileFormat = 'csv'): string {
  const who = stationIds.length === 1 ? stationIds[0] : `${stationIds.length}-stations`;
  const zone = (tz?: string) => (tz ? `_${tz.replaceAll('/', '-')}` : '');
  const what = dataset.kind === 'readings' ? '' : dataset.kind === 'aggregate' ? `_${periodAdjective[dataset.period]}${zone(dataset.tz)}` : `_${dataset.param}_by_${dataset.by}${zone(dataset.tz)}`;
  return `envmon_${who}_${from ?? 'start'}_${to ?? 'latest'}${what}.${format}`;
}

/** The headers every data file carries: its name, its licence as an RFC 8288 link, and the citation. */
export function attributeDownload(ctx: Context, fileName: string, cite: string): void {
  ctx.set('Content-Disposition', `attachment; filename="${fileName}"`);
  ctx.set('Link', `<${licenseUrl}>; rel="license"`);
  ctx.set('X-Attribution', cite);
}
