/**
 * The archive keeps instants to the millisecond: readings' timestamps, and every instant a query selects
 * them by. A time giving a digit other than zero below the millisecond is refused rather than truncated,
 * since the truncated instant would store, merge or select other readings than the one sent asks for.
 */

// The fraction of a time's seconds, with a digit other than zero after its third.
const beyondMillisecond = /:\d{2}\.\d{3}\d*[1-9]/;

/** Whether an ISO 8601 time names an instant between two milliseconds (zeros below the millisecond do not). */
export function finerThanMillisecond(text: string): boolean {
  return beyondMillisecond.test(text);
}

/** What is wrong with such a time, after the name of what gave it. */
export const finerThanMillisecondReason =
  'is finer than the millisecond the archive keeps: give at most three decimals of the second, or zeros after them';
