import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { invalidParameters, notFound } from '../../http/problem.js';
import { stationExists } from '../../stations/queries.js';

/**
 * The station a station-scoped request is about: the `station` parameter, else DEFAULT_STATION where the
 * endpoint allows a default. Throws 400 when neither is there.
 */
export function stationParam(given: string | undefined, fallback: string | undefined): string {
  const stationId = given ?? fallback;
  if (!stationId) throw invalidParameters([{ param: 'station', message: 'is required' }]);
  return stationId;
}

/** Throws 404 when the station does not exist. */
export async function requireStation(db: CommonQueryMethods, stationId: string): Promise<void> {
  if (!(await stationExists(db, stationId))) throw notFound(`station '${stationId}' is unknown`);
}

/** Throws 404 naming every unknown station among `ids`. */
export async function requireStations(db: CommonQueryMethods, ids: string[]): Promise<void> {
  const unknown = await findUnknownStations(db, ids);
  if (unknown.length === 1) throw notFound(`station '${unknown[0]}' is unknown`);
  if (unknown.length > 1) throw notFound(`stations ${unknown.map((id) => `'${id}'`).join(', ')} are unknown`);
}

/** Station ids among `ids` that do not exist, in the order given. */
export async function findUnknownStations(db: CommonQueryMethods, ids: string[]): Promise<string[]> {
  const unknown = await db.anyFirst(sql.type(z.object({ station_id: z.string() }))`
    select s.station_id from unnest(${sql.array(ids, 'text')}) with ordinality as s (station_id, i)
    where not exists (select 1 from stations t where t.station_id = s.station_id)
    order by s.i
  `);
  return [...unknown];
}
