import { z } from '../http/zod.js';

/** An RFC 7946 FeatureCollection of points, as the station list and the notes give it. */
export const featureCollectionSchema = z
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
