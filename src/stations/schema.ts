import { stationIdSchema } from '../http/params.js';
import { z } from '../http/zod.js';

export const stationStatuses = ['active', 'offline', 'planned', 'maintenance'] as const;


/** A station as `envmon stations add` creates or updates it. */
export const stationInputSchema = z.object({
  station_id: stationIdSchema,
  name: z.string().min(1),
  location_name: z.string(),
  altitude_m: z.number().finite(),
  latitude: z.number().min(-90).max(90).nullable(),
  longitude: z.number().min(-180).max(180).nullable(),
  status: z.enum(stationStatuses),
  /** Seconds between two readings of the station, for the aggregates' coverage. */
  interval_seconds: z.number().int().min(1).max(86_400).optional(),
});
export type StationInput = z.infer<typeof stationInputSchema>;
