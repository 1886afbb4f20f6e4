// The shared dataset of the read benches: N stations x one year of one-minute readings, loaded with
// COPY into `readings` (the portable engine's triggers build its rollups as the rows arrive; on
// timescale the continuous aggregates are materialised afterwards), then ANALYZEd.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import copyStreams from 'pg-copy-streams';
import type { Engine } from '../src/config.js';
import { createDb } from '../src/db/pool.js';
import { readingColumnNames } from '../src/readings/reading.js';
import { upsertStation } from '../src/stations/queries.js';

export const yearMinutes = 525_600;
export const yearStart = Date.parse('2025-01-01T00:00:00Z');

function* yearLines(stationId: string, seed: number, start: number): Generator<string> {
  let lines: string[] = [];
  for (let i = 0; i < yearMinutes; i++) {
    const day = i / 1440;
    const t = 10 + 10 * Math.sin((day / 365) * 2 * Math.PI) + 5 * Math.sin(day * 2 * Math.PI) + ((i * 7919 + seed) % 100) / 100;
    const pm = 5 + ((i * 104729 + seed) % 400) / 10;
    const flag = pm > 44 ? 'suspect' : 'ok';
    lines.push(`${stationId}\t${new Date(start + i * 60_000).toISOString()}\t${t.toFixed(2)}\t${(60 + 20 * Math.cos(day * 6.283)).toFixed(1)}\t${(1005 + 8 * Math.sin(day / 5)).toFixed(1)}\t210\t3.1\t${pm.toFixed(1)}\t12.4\t${420 + (i % 30)}\t0.3\t2.5\t${flag}\t2.4.1\t\\N\n`);
    if (lines.length === 5000) {
      yield lines.join('');
      lines = [];
    }
  }
  if (lines.length) yield lines.join('');
}

/**
 * Loads `stations` station-years (year-<first + 1> onwards) of one-minute readings from `start`;
 * returns the station ids.
 */
export async function loadStationYears(
  databaseUrl: string, engine: Engine, stations: number, { first = 0, start = yearStart } = {},
): Promise<string[]> {
  const db = await createDb(databaseUrl, engine, { poolSize: 2, statementTimeoutMs: 3_600_000 });
  const ids: string[] = [];
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    for (let s = first; s < first + stations; s++) {
      const id = `year-${s + 1}`;
      await upsertStation(db.pool, { station_id: id, name: `Year station ${s + 1}`, location_name: 'Bench', altitude_m: 210, latitude: 45, longitude: 6, status: 'active' });
      const started = performance.now();
      await pipeline(Readable.from(yearLines(id, s, start)), client.query(copyStreams.from(`copy readings (station_id, ${readingColumnNames.join(', ')}) from stdin`)));
      console.log(`loaded ${id}: ${yearMinutes} readings in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      ids.push(id);
    }
    // What the readings store does in its transaction, for rows that bypassed it.
    await client.query(`insert into station_latest (station_id, ts, first_ts) select station_id, max(ts), min(ts) from readings group by 1
      on conflict (station_id) do update set ts = greatest(station_latest.ts, excluded.ts),
        first_ts = least(station_latest.first_ts, excluded.first_ts), version = excluded.version`);
    const started = performance.now();
    await db.rollups.refresh();
    await client.query('analyze');
    console.log(`rollups built and analysed in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  } finally {
    await client.end();
    await db.close();
  }
  return ids;
}
