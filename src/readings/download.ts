import { PassThrough } from 'node:stream';
import type pg from 'pg';
import { copyOut } from '../db/copyOut.js';
import type { PgPool } from '../db/pool.js';
import type { QualityFlag } from './quality.js';

export const downloadColumns = [
  'timestamp_utc', 'temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5_ugm3', 'pm10_ugm3', 'co2_ppm', 'quality_flag',
] as const;

export type DownloadArgs = { stationIds: string[]; from?: string; to?: string; quality?: QualityFlag; withStation: boolean };

/**
 * The COPY statement for a download. COPY takes no bind parameters, so every value is a literal escaped
 * by the driver, and every value has passed its schema first (station ids, dates, an enum).
 */
export function downloadStatement(client: pg.ClientBase, args: DownloadArgs): string {
  const literal = (value: string) => client.escapeLiteral(value);
  const where = [`station_id in (${args.stationIds.map(literal).join(', ')})`];
  // Dates are UTC days, whatever the session's zone.
  if (args.from) where.push(`ts >= (${literal(args.from)}::date)::timestamp at time zone 'UTC'`);
  if (args.to) where.push(`ts < (${literal(args.to)}::date + 1)::timestamp at time zone 'UTC'`);
  if (args.quality) where.push(`quality_flag = ${literal(args.quality)}`);
  const columns = [
    ...(args.withStation ? ['station_id'] : []),
    `to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as timestamp_utc`,
    'temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5 as pm2_5_ugm3', 'pm10 as pm10_ugm3', 'co2_ppm', 'quality_flag',
  ];
  // The primary key (station_id, ts) serves one station in order; several are merged by timestamp.
  const order = args.withStation ? 'ts, station_id' : 'ts';
  return `copy (select ${columns.join(', ')} from readings where ${where.join(' and ')} order by ${order}) to stdout with (format csv)`;
}

/** Streams the CSV rows of a download after `preamble`, straight from PostgreSQL's COPY. */
export async function streamDownload(pool: PgPool, args: DownloadArgs, preamble: string): Promise<PassThrough> {
  const body = new PassThrough();
  body.write(preamble);
  return copyOut(pool, (client) => downloadStatement(client, args), body);
}
