import type { CommonQueryMethods } from 'slonik';
import { classifyDatabaseError } from '../db/errors.js';
import { serviceUnavailable } from '../http/problem.js';
import { z } from '../http/zod.js';
import { listStationFreshness } from '../stations/queries.js';

export const freshnessWindowMinutes = 90;

export const healthSchema = z
  .object({
    ok: z.boolean().openapi({ description: 'True when at least one station posted within the window.' }),
    checked_at: z.string().datetime(),
    window_minutes: z.number().int(),
    stations: z.array(
      z.object({
        station_id: z.string(),
        status: z.string(),
        last_seen: z.string().datetime().nullable(),
        age_minutes: z.number().nullable(),
        fresh: z.boolean(),
      }),
    ),
  })
  .openapi('Health');
export type Health = z.infer<typeof healthSchema>;

/**
 * The health report. Throws a 503 problem that still carries `ok: false` when the database does not
 * answer, so that uptime monitors reading either the status or the body see the outage.
 */
export async function checkHealth(db: CommonQueryMethods): Promise<Health> {
  const checkedAt = new Date().toISOString();
  try {
    const stations = (await listStationFreshness(db)).map((row) => ({
      ...row,
      fresh: row.age_minutes !== null && row.age_minutes <= freshnessWindowMinutes,
    }));
    return { ok: stations.some((s) => s.fresh), checked_at: checkedAt, window_minutes: freshnessWindowMinutes, stations };
  } catch (error) {
    if (!classifyDatabaseError(error)) throw error;
    throw serviceUnavailable('the database is not answering', {
      ok: false,
      checked_at: checkedAt,
      window_minutes: freshnessWindowMinutes,
      stations: [],
    });
  }
}
