import type { StationInput } from '../../stations/schema.js';
import type { DemoClimate } from './readings.js';

/** The demo network: three reporting stations in different climates, and one planned. */
export const demoStations: (StationInput & { climate?: DemoClimate })[] = [
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
