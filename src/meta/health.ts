import type { CommonQueryMethods } from 'slonik';
import { classifyDatabaseError } from '../db/errors.js';
import type { ReplicaStatus } from '../db/replicas.js';
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
    replicas: z.array(
      z.object({
        name: z.string().openapi({ description: '`replica N`: the Nth URL of DATABASE_READ_URL (no address is published)', example: 'replica 1' }),
        state: z.enum(['current', 'lagging', 'unreachable', 'not a standby']).openapi({
          description: 'current: serves downloads, histories and aggregates; lagging: replay lag beyond REPLICA_MAX_LAG_SECONDS, skipped until it catches up; unreachable: does not answer; not a standby: not in recovery, never used',
        }),
        lag_seconds: z.number().nullable().openapi({ description: 'Age of the oldest write of the primary it has not replayed, to within a quarter second; 0 when it has replayed all; null when unknown' }),
      }),
    ).openapi({ description: 'The read replicas (DATABASE_READ_URL), checked four times a second; empty without them' }),
  })
  .openapi('Health');
export type Health = z.infer<typeof healthSchema>;

/**
 * The health report. Throws a 503 problem that still carries `ok: false` when the database does not
 * answer, so that uptime monitors reading either the status or the body see the outage.
 */
export async function checkHealth(db: CommonQueryMethods, replicas: ReplicaStatus[]): Promise<Health> {
  const checkedAt = new Date().toISOString();
  try {
    const stations = (await listStationFreshness(db)).map((row) => ({
      ...row,
      fresh: row.age_minutes !== null && row.age_minutes <= freshnessWindowMinutes,
    }));
    return { ok: stations.some((s) => s.fresh), checked_at: checkedAt, window_minutes: freshnessWindowMinutes, stations, replicas };
  } catch (error) {
    if (!classifyDatabaseError(error)) throw error;
    throw serviceUnavailable('the database is not answering', {
      ok: false,
      checked_at: checkedAt,
      window_minutes: freshnessWindowMinutes,
      stations: [],
      replicas,
    });
  }
}
