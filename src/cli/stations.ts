import type { Db } from '../db/pool.js';
import { upsertStation } from '../stations/queries.js';
import { stationInputSchema } from '../stations/schema.js';
import { parseCommandArgs } from './args.js';
import { UsageError } from './usage.js';

const number = (name: string, value: string | undefined) => {
  if (value === undefined) return null;
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new UsageError(`--${name} must be a number, got '${value}'`);
  return parsed;
};

/** `envmon stations add ID --name N --location-name L --altitude M [--lat X --lon Y] [--status S] [--interval-seconds S]` */
export async function stationsCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'add') throw new UsageError(`unknown stations command '${sub ?? ''}'; use 'stations add'`);
  const { values, positionals } = parseCommandArgs(
    rest,
    {
      name: { type: 'string' },
      'location-name': { type: 'string' },
      altitude: { type: 'string' },
      lat: { type: 'string' },
      lon: { type: 'string' },
      status: { type: 'string' },
      'interval-seconds': { type: 'string' },
    },
    ['ID'],
  );
  if (values.name === undefined) throw new UsageError('--name is required');
  if (values['location-name'] === undefined) throw new UsageError('--location-name is required');
  if (values.altitude === undefined) throw new UsageError('--altitude is required');
  if ((values.lat === undefined) !== (values.lon === undefined)) throw new UsageError('--lat and --lon go together');
  const parsed = stationInputSchema.safeParse({
    station_id: positionals[0],
    name: values.name,
    location_name: values['location-name'],
    altitude_m: number('altitude', values.altitude),
    latitude: number('lat', values.lat),
    longitude: number('lon', values.lon),
    status: values.status ?? 'active',
    interval_seconds: number('interval-seconds', values['interval-seconds']) ?? undefined,
  });
  if (!parsed.success) {
    const flags: Record<string, string> = {
      station_id: 'ID', latitude: '--lat', longitude: '--lon', status: '--status', name: '--name', interval_seconds: '--interval-seconds',
    };
    throw new UsageError(parsed.error.issues.map((i) => `${flags[String(i.path[0])] ?? String(i.path[0])} ${i.message}`).join('; '));
  }
  const station = await upsertStation(db.pool, parsed.data);
  out(`station ${station.station_id} saved (${station.name}, ${station.status}, a reading every ${station.interval_seconds} s)`);
}
