import { z } from '../http/zod.js';
import { clampedInteger, stationIdSchema } from '../http/params.js';
import { readingFields, type CompareParam } from '../readings/reading.js';

export const widgetParams = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm2_5', 'co2_ppm'] as const satisfies readonly CompareParam[];
export type WidgetParam = (typeof widgetParams)[number];

const widgetLabels: Record<WidgetParam, string> = {
  temperature_c: 'Temperature', humidity_rh: 'Relative humidity', pressure_hpa: 'Pressure', pm2_5: 'PM2.5', co2_ppm: 'CO₂',
};

/**
 * A unit as a narrow axis label shows it: a unit written as a symbol and the words for what it measures
 * ('% relative humidity') by its symbol, any other ('hPa', 'µg/m³', 'UV index') whole.
 */
export const unitSymbol = (unit: string) => /^[^\sA-Za-z]\S*(?= [a-z])/.exec(unit)?.[0] ?? unit;

/** Each metric's name in the widget, and its unit from the reading's own table: `unit` as shown, `unitName` written out. */
export const widgetUnits = Object.fromEntries(widgetParams.map((param) => {
  const { unit } = readingFields.find((f) => f.name === param)!;
  return [param, { label: widgetLabels[param], unit: unitSymbol(unit), unitName: unit }];
})) as Record<WidgetParam, { label: string; unit: string; unitName: string }>;

export const widgetPathSchema = z.object({ station_id: stationIdSchema });

export const widgetQuerySchema = z.object({
  param: z.enum(widgetParams).default('temperature_c'),
  theme: z.enum(['dark', 'light']).default('dark'),
  hours: clampedInteger(24, 1, 168),
  refresh: clampedInteger(60, 2, 60).openapi({ description: 'Seconds between refreshes, clamped to 2..60; for tests and kiosks' }),
});
export type WidgetQuery = z.infer<typeof widgetQuerySchema>;
