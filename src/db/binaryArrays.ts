import { postgresEpochMs } from './copyBinary.js';

/**
 * The elements of a one-dimensional array in PostgreSQL's binary format (as COPY's binary format or a
 * binary result gives it): the dimension header, then each element's length (-1 for NULL) and bytes.
 * Read straight into a typed array: a year of readings is one array per column, not a row each.
 */
function readElements(bytes: Buffer, read: (view: DataView, at: number) => number): Float64Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const dimensions = view.getInt32(0);
  if (dimensions === 0) return new Float64Array(0);
  const count = view.getInt32(12);
  const out = new Float64Array(count);
  let at = 12 + 8 * dimensions;
  for (let i = 0; i < count; i++) {
    const length = view.getInt32(at);
    at += 4;
    if (length < 0) out[i] = NaN;
    else {
      out[i] = read(view, at);
      at += length;
    }
  }
  return out;
}

/** A float8[] in binary format; NULL as NaN. */
export const float8Array = (bytes: Buffer): Float64Array => readElements(bytes, (view, at) => view.getFloat64(at));

const epochMicros = postgresEpochMs * 1000;

/** A timestamptz[] in binary format, as microseconds since 1970 (whole numbers, exact in a double until 2255). */
export const timestampArray = (bytes: Buffer): Float64Array =>
  // The high word times 2^32 plus the low word: exact, and no BigInt per element.
  readElements(bytes, (view, at) => view.getInt32(at) * 4_294_967_296 + view.getUint32(at + 4) + epochMicros);
