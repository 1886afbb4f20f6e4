import { z } from '../../../http/zod.js';

/** A QARTOD flag as the API gives it. */
export const qcFlagSchema = z
  .union([z.literal(1), z.literal(2), z.literal(3), z.literal(4), z.literal(9)])
  .openapi('QcFlag', { description: 'QARTOD flag: 1 pass, 2 not evaluated, 3 suspect, 4 fail, 9 missing', type: 'integer', enum: [1, 2, 3, 4, 9] });
