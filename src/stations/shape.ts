import { z } from '../http/zod.js';
import { readingSchema, shapeReading } from '../readings/shape.js';
import type { StationWithLatestRow } from './queries.js';
import { stationStatuses } from './schema.js';

export const stationSchema = z
  .object({
    station_id: z.string(),
    name: z.string(),
    location_name: z.string(),
    altitude_m: z.number(),
    latitude: z.number().nullable(),
    longitude: z.number().nullable(),
    status: z.enum(stationStatuses),
    last_seen: z.string().datetime().nullable(),
    latest_reading: readingSchema.nullable(),
    latest: readingSchema.nullable().openapi({ description: 'The same object as latest_reading, kept for older clients.' }),
  })
  .openapi('Station');
export type Station = z.infer<typeof stationSchema>;

export const stationListSchema = z.object({ count: z.number().int(), stations: z.array(stationSchema) }).openapi('StationList');

const featureCollectionSchema = z
  .object({
    type: z.literal('FeatureCollection'),
    features: z.array(
      z.object({
        type: z.literal('Feature'),
        id: z.string(),
        geometry: z.object({ type: z.literal('Point'), coordinates: z.array(z.number()) }).nullable(),
        properties: z.record(z.unknown()),
      }),
    ),
  })
  .openapi('FeatureCollection');
export { featureCollectionSchema };

export function shapeStation(row: StationWithLatestRow): Station {
  const latest = row.latest ? shapeReading(row.latest) : null;
  return {
    station_id: row.station_id,
    name: row.name,
    location_name: row.location_name,
    altitude_m: row.altitude_m,
    latitude: row.latitude,
    longitude: row.longitude,
    status: row.status as Station['status'],
    last_seen: latest?.timestamp ?? null,
    latest_reading: latest,
    latest,
  };
}

type Located = { latitude: number | null; longitude: number | null; altitude_m: number | null };

/** RFC 7946 FeatureCollection: Point [lon, lat, alt], null geometry when unlocated; other fields as properties. */
export function shapeFeatureCollection<T extends Located>(items: readonly T[], id: (item: T) => string) {
  return {
    type: 'FeatureCollection' as const,
    features: items.map((item) => {
      const { latitude, longitude, ...properties } = item;
      const coordinates = item.altitude_m == null ? [longitude, latitude] : [longitude, latitude, item.altitude_m];
      return {
        type: 'Feature' as const,
        id: id(item),
        geometry: latitude == null || longitude == null ? null : { type: 'Point' as const, coordinates: coordinates as number[] },
        properties,
      };
    }),
  };
}
