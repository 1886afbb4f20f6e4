import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../db/pool.js';
import { generateDemoReadings } from '../readings/demo/readings.js';
import { demoStations } from '../readings/demo/stations.js';
import demoContent from '../content/demoContent.json' with { type: 'json' };
import { importContent, parseContentFile } from '../content/importContent.js';
import { storeReadings } from '../readings/ingest/store.js';
import type { NewReading } from '../readings/reading.js';
import { upsertStation } from '../stations/queries.js';

const demoDays = 30;
const batchSize = 10_000;

/** True when the database holds no station yet: the demo only ever loads into an empty database. */
export async function isEmpty(db: Db): Promise<boolean> {
  return !(await db.pool.exists(sql.type(z.object({ one: z.number() }))`select 1 as one from stations`));
}

/** Loads the demo stations, 30 days of one-minute readings up to now (through the readings store) and the demo content. */
export async function loadDemo(db: Db): Promise<{ stations: number; readings: number }> {
  const end = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const minutes = demoDays * 1440;
  const start = new Date(end.getTime() - (minutes - 1) * 60_000);
  let readings = 0;
  for (const [index, { climate, ...station }] of demoStations.entries()) {
    await upsertStation(db.pool, station);
    if (!climate) continue;
    let batch: NewReading[] = [];
    for (const reading of generateDemoReadings(climate, start, minutes, index + 1)) {
      batch.push(reading);
      if (batch.length === batchSize) {
        readings += (await storeReadings(db, station.station_id, batch)).accepted;
        batch = [];
      }
    }
    if (batch.length > 0) readings += (await storeReadings(db, station.station_id, batch)).accepted;
  }
  await db.rollups.refresh();
  await importContent(db.pool, parseContentFile(demoContent));
  // Fresh statistics, so that the first queries after a bulk load are planned on real row counts.
  await db.pool.query(sql.type(z.object({}))`analyze`);
  return { stations: demoStations.length, readings };
}
