import { clampedInteger, stationIdSchema } from '../../http/params.js';
import { z } from '../../http/zod.js';
import { qualitySchema, stationWithDefault } from '../core/params.js';

export const latestQuerySchema = z.object({ station: stationIdSchema });

export const historicalQuerySchema = (defaultStation: string | undefined) => z.object({
  station: stationWithDefault(defaultStation),
  hours: clampedInteger(24, 1, 720),
  quality: qualitySchema,
});

