import { downloadColumns } from './download.js';

export const licenseUrl = 'https://creativecommons.org/licenses/by/4.0/';

type Range = { from?: string; to?: string };

const describeRange = ({ from, to }: Range) =>
  from && to ? `from ${from} to ${to}` : from ? `from ${from} onwards` : to ? `up to ${to}` : 'full history';

/** The citation a user of the data should give; sent as X-Attribution and in the CSV preamble. */
export function citation(baseUrl: string, stationIds: string[], range: Range): string {
  const retrieved = new Date().toISOString().slice(0, 10);
  return `envmon environmental monitoring network, station${stationIds.length > 1 ? 's' : ''} ${stationIds.join(', ')}, ` +
    `readings ${describeRange(range)}, retrieved ${retrieved} from ${baseUrl}/data/download/. Licensed CC BY 4.0.`;
}

/** The comment lines and header row that open every download. */
export function preamble(cite: string, withStation: boolean): string {
  return [
    `# Data licensed under Creative Commons Attribution 4.0 International (CC BY 4.0): ${licenseUrl}`,
    `# Cite as: ${cite}`,
    `# Timestamps are UTC. Empty fields are missing values.`,
    [...(withStation ? ['station_id'] : []), ...downloadColumns].join(','),
  ].join('\n') + '\n';
}

export function downloadFileName(stationIds: string[], { from, to }: Range): string {
  const who = stationIds.length === 1 ? stationIds[0] : `${stationIds.length}-stations`;
  return `envmon_${who}_${from ?? 'start'}_${to ?? 'latest'}.csv`;
}
