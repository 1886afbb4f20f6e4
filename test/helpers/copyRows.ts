import type { CopyRows } from '../../src/readings/ingest/copyRows.js';

/** A readings row as the database takes it: station, time, the ten measurements, flag, firmware, module_data text. */
export type RowValues = (string | number | null)[];

const postgresEpochMs = Date.UTC(2000, 0, 1);

/**
 * Row `i` of a batch read back from COPY's binary format by the layout of the readings columns, apart from
 * the code that writes it: text as UTF-8, a timestamptz as microseconds from 2000-01-01, a float8 as a
 * big-endian double, a jsonb as its version byte (1) and JSON text.
 */
export function rowValues(rows: CopyRows, i: number): RowValues {
  const fields = rows.fields(i);
  if (fields.length !== 15) throw new Error(`a readings row has 15 fields, not ${fields.length}`);
  return fields.map((field, f) => {
    if (field === null) return null;
    if (f === 1) return new Date(Number(field.readBigInt64BE(0) / 1000n) + postgresEpochMs).toISOString();
    if (f >= 2 && f <= 11) {
      if (field.length !== 8) throw new Error(`field ${f} is a float8 of ${field.length} bytes`);
      return field.readDoubleBE(0);
    }
    if (f === 14) {
      if (field[0] !== 1) throw new Error(`jsonb version ${field[0]}`);
      return field.toString('utf8', 1);
    }
    return field.toString('utf8');
  });
}
