/**
 * The readings a statement reads, as SQL text of a relation aliased `r`: the archive as it stood at an
 * instant (envmon_readings_as_of: the readings recorded by then and not deleted by then, with the flag in
 * force then), or the table itself. Every read of readings that may be answered as of an instant takes its
 * relation from here, so that "as of, else now" is decided once. The caller's own conditions on
 * r.station_id and r.ts follow in both cases; the function reads only `stations` between `from` and `to`.
 * @param asOf SQL of the instant (a parameter such as `$3`), or undefined for the table
 * @param stations SQL of a text[] of the stations read
 * @param from SQL of the first instant that may be read (inclusive), @param to of the first that may not
 */
export function readingsSource(asOf: string | undefined, stations: string, from = `'-infinity'`, to = `'infinity'`): string {
  return asOf ? `envmon_readings_as_of(${stations}, ${from}, ${to}, ${asOf}::timestamptz) r` : 'readings r';
}
