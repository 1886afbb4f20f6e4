import type { Context } from 'koa';
import type { AsOf } from './asOf.js';
import type { AggregatePeriod } from './params.js';

export const licenseUrl = 'https://creativecommons.org/licenses/by/4.0/';

type Range = { from?: string; to?: string };

/** What a file holds: the raw readings, or their aggregates over a period. */
export type Dataset = { kind: 'readings' } | { kind: 'aggregate'; period: AggregatePeriod };

export const periodAdjective: Record<AggregatePeriod, string> = { hour: 'hourly', day: 'daily', week: 'weekly', month: 'monthly' };

/** A range of dates in words: "from A to B", "up to B", "full history". */
export const describeRange = ({ from, to }: Range) =>
  from && to ? `from ${from} to ${to}` : from ? `from ${from} onwards` : to ? `up to ${to}` : 'full history';

/**
 * The citation a user of the data should give; sent as X-Attribution and in the CSV preamble. A read as
 * of an instant names it: the same citation then names the same data.
 */
export function citation(baseUrl: string, stationIds: string[], range: Range, dataset: Dataset = { kind: 'readings' }, asOf?: AsOf): string {
  const retrieved = new Date().toISOString().slice(0, 10);
  const what = dataset.kind === 'readings' ? 'readings' : `${periodAdjective[dataset.period]} aggregates of readings`;
  const endpoint = dataset.kind === 'readings' ? 'download' : 'aggregate';
  return `envmon environmental monitoring network, station${stationIds.length > 1 ? 's' : ''} ${stationIds.join(', ')}, ` +
    `${what} ${describeRange(range)}${asOf ? ` as of ${asOf.iso}` : ''}, retrieved ${retrieved} from ${baseUrl}/data/${endpoint}/. Licensed CC BY 4.0.`;
}

export type FileFormat = 'csv' | 'parquet';

/**
 * The key-value metadata of every Parquet file: what a CSV file says in its comment lines, the licence
 * and the citation, under keys a reader can look up.
 */
export const parquetMetadata = (cite: string, asOf?: AsOf): Record<string, string> => ({
  license: licenseUrl,
  citation: cite,
  timezone: 'UTC',
  ...(asOf ? { as_of: asOf.iso } : {}),
});

/** The comment lines and header row that open every CSV file of readings or aggregates. */
export function preamble(cite: string, columns: readonly string[]): string {
  return [
    `# Data licensed under Creative Commons Attribution 4.0 International (CC BY 4.0): ${licenseUrl}`,
    `# Cite as: ${cite}`,
    `# Timestamps are UTC. Empty fields are missing values.`,
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
  const what = dataset.kind === 'readings' ? '' : `_${periodAdjective[dataset.period]}`;
  return `envmon_${who}_${from ?? 'start'}_${to ?? 'latest'}${what}.${format}`;
}

/** The headers every data file carries: its name, its licence as an RFC 8288 link, and the citation. */
export function attributeDownload(ctx: Context, fileName: string, cite: string): void {
  ctx.set('Content-Disposition', `attachment; filename="${fileName}"`);
  ctx.set('Link', `<${licenseUrl}>; rel="license"`);
  ctx.set('X-Attribution', cite);
}
