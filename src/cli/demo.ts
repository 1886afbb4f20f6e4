import { sql } from 'slonik';
import { z } from 'zod';
import type { Db } from '../db/pool.js';
import { generateDemoReadings, type DemoClimate } from '../readings/demoReadings.js';
import demoContent from '../content/demoContent.json' with { type: 'json' };
import { importContent, parseContentFile } from '../content/importContent.js';
import { storeReadings, type NewReading } from '../readings/store.js';
import { upsertStation } from '../stations/queries.js';
import type { StationInput } from '../stations/schema.js';

const demoStations: (StationInput & { climate?: DemoClimate })[] = [
  {
    station_id: 'alpine-01', name: 'Col du Lautaret Alpine Station', location_name: 'Col du Lautaret, Hautes-Alpes',
    altitude_m: 2058, latitude: 45.0353, longitude: 6.4006, status: 'active',
    climate: { temperature: 3, temperatureSwing: 6, humidity: 70, pressure: 790, altitude: 2058, pm25: 3, co2: 415 },
  },
  {
    station_id: 'coast-01', name: 'Brest Coastal Observatory', location_name: 'Plouzané, Finistère',
    altitude_m: 12, latitude: 48.3582, longitude: -4.5705, status: 'active',
    climate: { temperature: 11, temperatureSwing: 3, humidity: 85, pressure: 1012, altitude: 12, pm25: 6, co2: 420 },
  },
  {
    station_id: 'urban-01', name: 'Lyon Rooftop Air Quality Station', location_name: 'Lyon 7e, Rhône',
    altitude_m: 175, latitude: 45.7485, longitude: 4.8467, status: 'active',
    climate: { temperature: 9, temperatureSwing: 5, humidity: 72, pressure: 993, altitude: 175, pm25: 14, co2: 445 },
  },
  {
    station_id: 'forest-01', name: 'Vercors Forest Plot', location_name: 'Vassieux-en-Vercors, Drôme',
    altitude_m: 1050, latitude: 44.8939, longitude: 5.3703, status: 'planned',
  },
];

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
