import { PassThrough } from 'node:stream';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
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

/**
 * Streams the CSV rows of a download after `preamble`, straight from PostgreSQL's COPY: memory stays
 * flat whatever the history length. When the HTTP client goes away the stream is destroyed and its
 * connection discarded with an error, which ends the COPY on the server at once.
 */
export async function streamDownload(pool: pg.Pool, args: DownloadArgs, preamble: string): Promise<PassThrough> {
  const client = await pool.connect();
  const body = new PassThrough();
  let released = false;
  const release = (error?: Error) => {
    if (released) return;
    released = true;
    client.release(error);
  };
  let copy;
  try {
    copy = client.query(copyTo(downloadStatement(client, args)));
  } catch (error) {
    release(error as Error);
    throw error;
  }
  body.write(preamble);
  copy.on('error', (error) => {
    release(error);
    body.destroy(error);
  });
  copy.on('end', () => release());
  copy.pipe(body);
  body.on('close', () => {
    if (!copy.readableEnded) {
      copy.destroy();
      // Discarding the connection stops the backend only when it next writes to the closed socket;
      // cancelling it by process id stops the COPY at once, however loaded the machine is.
      const pid = (client as pg.PoolClient & { processID?: number }).processID;
      release(new Error('download abandoned by the client'));
      if (pid) pool.query('select pg_cancel_backend($1)', [pid]).catch(() => {});
    }
  });
  return body;
}
