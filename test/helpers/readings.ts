import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../../src/db/pool.js';
import { flagFor, valuesOf } from '../../src/readings/reading.js';
import type { NewReading } from '../../src/readings/reading.js';
import { upsertStation } from '../../src/stations/queries.js';
import { admin } from './database.js';

/** A seeded generator so that a failing case can be replayed. */
export function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 4294967296;
  };
}

/**
 * `count` readings `stepMinutes` apart from `start`, with awkward values: nulls, values out of the
 * plausibility bounds (so some are suspect), fractions that do not add up exactly in binary.
 */
export function makeReadings(count: number, start: string, stepMinutes: number, seed = 1): NewReading[] {
  const random = seeded(seed);
  const maybe = (value: number) => (random() < 0.1 ? null : value);
  const t0 = Date.parse(start);
  return Array.from({ length: count }, (_, i) => {
    const values = {
      temperature_c: maybe(-55 + random() * 120),
      humidity_rh: maybe(random() * 104),
      pressure_hpa: maybe(280 + random() * 840),
      altitude_m: 100,
      pm1_0: maybe(random() * 30),
      pm2_5: maybe(random() * 1050),
      pm10: maybe(random() * 80),
      co2_ppm: maybe(400 + random() * 100),
      co_ppm: null,
      uv_index: maybe(random() * 11),
    };
    return {
      ts: new Date(t0 + i * stepMinutes * 60_000).toISOString(),
      ...values,
      quality_flag: flagFor(valuesOf(values)),
      firmware_version: 'test-1',
      module_data: null,
    };
  });
}

export async function addStation(db: Db, stationId: string): Promise<void> {
  await upsertStation(db.pool, {
    station_id: stationId,
    name: `Station ${stationId}`,
    location_name: 'Test site',
    altitude_m: 100,
    latitude: 45,
    longitude: 6,
    status: 'active',
  });
}

export async function countReadings(db: Db, stationId: string): Promise<number> {
  return db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`select count(*)::int as n from readings where station_id = ${stationId}`);
}

/**
 * Runs a fixture's bulk statements (hundreds of thousands of generated readings) in order on a connection of
 * their own. A fixture is not a request: neither the service's statement timeout nor its pool's deadline for
 * a call (20 s in the tests) may cut it on a slow machine, where a million and a half readings through the
 * portable rollup trigger took longer than that.
 */
export async function bulkFixture(databaseUrl: string, ...statements: string[]): Promise<void> {
  await admin(databaseUrl, async (client) => {
    await client.query('set statement_timeout = 0');
    for (const statement of statements) await client.query(statement);
  });
}
