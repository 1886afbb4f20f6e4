import { z } from '../http/zod.js';
import { clampedInteger, stationIdSchema } from '../http/params.js';

export const widgetParams = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'co2_ppm'] as const;
export type WidgetParam = (typeof widgetParams)[number];

export const widgetUnits: Record<WidgetParam, { label: string; unit: string }> = {
  temperature_c: { label: 'Temperature', unit: '°C' },
  humidity_rh: { label: 'Relative humidity', unit: '%' },
  pressure_hpa: { label: 'Pressure', unit: 'hPa' },
  pm2_5: { label: 'PM2.5', unit: 'µg/m³' },
  co2_ppm: { label: 'CO₂', unit: 'ppm' },
};

export const widgetPathSchema = z.object({ station_id: stationIdSchema });

export const widgetQuerySchema = z.object({
  param: z.enum(widgetParams).default('temperature_c'),
  theme: z.enum(['dark', 'light']).default('dark'),
  hours: clampedInteger(24, 1, 168),
  refresh: clampedInteger(60, 2, 60).openapi({ description: 'Seconds between refreshes, clamped to 2..60; for tests and kiosks' }),
});
export type WidgetQuery = z.infer<typeof widgetQuerySchema>;
