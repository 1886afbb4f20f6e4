import { stationIdSchema } from '../../http/params.js';
import { z } from '../../http/zod.js';

export const latestQuerySchema = z.object({ station: stationIdSchema });
