import { finerThanMillisecond, finerThanMillisecondReason } from '../readings/core/millisecond.js';
import { UsageError } from './usage.js';

/** A date alone means the whole UTC day: its start for --from, its last millisecond for --to. */
export function parseTime(name: 'from' | 'to', value: string | undefined): string {
  if (value === undefined) throw new UsageError(`--${name} is required`);
  const iso = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}(:?\d{2})?)?$/;
  if (!iso.test(value)) throw new UsageError(`--${name} must be an ISO 8601 date or time, got '${value}'`);
  // Readings are kept to the millisecond: a bound truncated to one could take in a reading it leaves out.
  if (finerThanMillisecond(value)) throw new UsageError(`--${name} ${finerThanMillisecondReason}, got '${value}'`);
  const hasOffset = /(Z|[+-]\d{2}(:?\d{2})?)$/.test(value) && value.length > 10;
  const date = new Date(
    value.length === 10 ? `${value}T${name === 'to' ? '23:59:59.999' : '00:00:00'}Z` : hasOffset ? value : `${value}Z`,
  );
  if (Number.isNaN(date.getTime())) throw new UsageError(`--${name} is not a valid time: '${value}'`);
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) throw new UsageError(`--${name} must be within the years 0001 to 9999`);
  return date.toISOString();
}
