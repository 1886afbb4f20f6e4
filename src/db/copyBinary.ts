import { Transform, type TransformCallback } from 'node:stream';

/** How a column of a binary COPY is read: the PostgreSQL types the answers need. */
export type BinaryColumn = 'timestamptz' | 'float8' | 'text';

/** A column's values: timestamps as microseconds since 1970 (UTC), doubles as numbers, text as strings. */
export type ColumnValues = (bigint | number | string | null)[];

/** Rows of a binary COPY, column by column. */
export type ColumnBatch = { rows: number; columns: ColumnValues[] };

// COPY's binary format: an 11-byte signature, a flags word and the length of a header extension (both
// zero when written), the extension, the tuples (a field count, then each field's length and bytes, -1
// for a NULL), and a field count of -1 for the end.
const signature = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const headerBytes = signature.length + 8;
/** The header and the end of a binary COPY written by the service. */
export const binaryCopyHeader = Buffer.concat([signature, Buffer.alloc(8)]);
export const binaryCopyTrailer = Buffer.from([0xff, 0xff]);

/** Where the tuples of binary COPY output start, past its header; -1 while the header is not all here. */
export function tuplesStart(bytes: Buffer): number {
  if (bytes.length < headerBytes) return -1;
  if (!bytes.subarray(0, signature.length).equals(signature)) throw new Error('not a binary COPY');
  return headerBytes + bytes.readInt32BE(headerBytes - 4);
}

/** The fields of the whole tuple at `at`, each as a view of its bytes or null; null at the end mark. */
export function tupleFields(bytes: Buffer, at: number): (Buffer | null)[] | null {
  const count = bytes.readInt16BE(at);
  at += 2;
  if (count < 0) return null;
  const fields: (Buffer | null)[] = [];
  for (let f = 0; f < count; f++) {
    const length = bytes.readInt32BE(at);
    at += 4;
    fields.push(length < 0 ? null : bytes.subarray(at, at + length));
    at += Math.max(length, 0);
  }
  return fields;
}

/** PostgreSQL counts timestamps from 2000-01-01; Parquet and JavaScript from 1970-01-01. */
export const postgresEpochMs = Date.UTC(2000, 0, 1);
const epochShiftMicros = BigInt(postgresEpochMs) * 1000n;

/**
 * A Transform from `COPY ... TO STDOUT (format binary)` to batches of rows: the bytes past the header go
 * to `readRows` as they arrive, what it leaves (a row cut short by a chunk's end) waits for the next chunk.
 */
abstract class BinaryCopyBatches extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private headerRead = false;

  constructor(ahead: number) {
    // `ahead` batches wait while the one before is used: COPY then waits too, rather than filling memory.
    super({ readableObjectMode: true, readableHighWaterMark: ahead });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
      let at = 0;
      if (!this.headerRead) {
        at = tuplesStart(this.pending);
        if (at >= 0) this.headerRead = true;
      }
      this.pending = at < 0 ? this.pending : this.pending.subarray(this.readRows(this.pending, at));
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    if (this.pending.length) return done(new Error('binary COPY ended inside a row'));
    this.flushBatch();
    done();
  }

  /** Reads the whole rows of `buffer` from `at`, returning where the first one not read starts (its length at the end mark). */
  protected abstract readRows(buffer: Buffer, at: number): number;
  /** Pushes the batch being filled, if it holds any row. */
  protected abstract flushBatch(): void;
}

/**
 * Reads `COPY ... TO STDOUT (format binary)` into batches of `batchRows` rows, column by column: the
 * typed values come straight from the wire, with no text to format and parse again (a timestamp is
 * eight bytes, not 24 characters), and memory holds one batch whatever the number of rows.
 */
export class CopyBinaryReader extends BinaryCopyBatches {
  private batch: ColumnBatch;

  constructor(private readonly types: readonly BinaryColumn[], private readonly batchRows: number) {
    super(1);
    this.batch = this.emptyBatch();
  }

  protected flushBatch(): void {
    if (this.batch.rows) this.push(this.batch);
  }

  private emptyBatch(): ColumnBatch {
    return { rows: 0, columns: this.types.map(() => []) };
  }

  protected readRows(buffer: Buffer, at: number): number {
    for (;;) {
      if (at + 2 > buffer.length) return at;
      const fields = buffer.readInt16BE(at);
      if (fields === -1) return buffer.length;
      if (fields !== this.types.length) throw new Error(`binary COPY row of ${fields} fields, expected ${this.types.length}`);
      // A row is read only once all of it is here.
      let end = at + 2;
      for (let f = 0; f < fields; f++) {
        if (end + 4 > buffer.length) return at;
        const size = buffer.readInt32BE(end);
        end += 4 + Math.max(size, 0);
        if (end > buffer.length) return at;
      }
      let field = at + 2;
      for (let f = 0; f < fields; f++) {
        const size = buffer.readInt32BE(field);
        field += 4;
        this.batch.columns[f]!.push(size < 0 ? null : this.value(this.types[f]!, buffer, field, size));
        field += Math.max(size, 0);
      }
      at = end;
      if (++this.batch.rows === this.batchRows) {
        this.push(this.batch);
        this.batch = this.emptyBatch();
      }
    }
  }

  private value(type: BinaryColumn, buffer: Buffer, at: number, size: number): bigint | number | string {
    switch (type) {
      case 'timestamptz': return buffer.readBigInt64BE(at) + epochShiftMicros;
      case 'float8': return buffer.readDoubleBE(at);
      case 'text': return buffer.toString('utf8', at, at + size);
    }
  }
}

/** Rows of a binary COPY of a timestamptz and doubles, column by column in typed arrays. */
export type FloatBatch = {
  /** The first column, in milliseconds since 1970 (to the microsecond). */
  times: Float64Array;
  /** The other columns, NaN for NULL. */
  columns: Float64Array[];
};

const epochShiftMs = postgresEpochMs;

/**
 * Reads `COPY ... TO STDOUT (format binary)` of a timestamptz followed by `doubles` float8 columns into
 * batches of `batchRows` rows held in typed arrays: no value is boxed, and memory holds one batch
 * whatever the number of rows. For the reads that compute over every row (quality flags), not for
 * answers that pass values on.
 */
export class CopyFloatReader extends BinaryCopyBatches {
  private batch: FloatBatch;
  private rows = 0;

  /** `ahead`: batches read ahead of the one in use, so that the database goes on while it is used. */
  constructor(private readonly doubles: number, private readonly batchRows: number, ahead = 1) {
    super(ahead);
    this.batch = this.emptyBatch();
  }

  protected flushBatch(): void {
    if (this.rows) this.push(this.trimmed());
  }

  private emptyBatch(): FloatBatch {
    return { times: new Float64Array(this.batchRows), columns: Array.from({ length: this.doubles }, () => new Float64Array(this.batchRows)) };
  }

  private trimmed(): FloatBatch {
    const { times, columns } = this.batch;
    return { times: times.subarray(0, this.rows), columns: columns.map((c) => c.subarray(0, this.rows)) };
  }

  protected readRows(buffer: Buffer, at: number): number {
    const view = new DataView(buffer.buffer, buffer.byteOffset, buffer.length);
    const length = buffer.length;
    const fields = this.doubles + 1;
    // A row is written into the batch as it is read; one cut short by the chunk's end is not counted, and
    // is read again, whole, with the next chunk.
    for (;;) {
      if (at + 2 > length) return at;
      const count = view.getInt16(at);
      if (count === -1) return length;
      if (count !== fields) throw new Error(`binary COPY row of ${count} fields, expected ${fields}`);
      const row = this.rows;
      let field = at + 2;
      if (field + 4 > length) return at;
      const size = view.getInt32(field);
      field += 4;
      if (size >= 0) {
        if (field + size > length) return at;
        // The microseconds' high word times 2^32 plus the low word: exact, with no BigInt.
        this.batch.times[row] = (view.getInt32(field) * 4_294_967_296 + view.getUint32(field + 4)) / 1000 + epochShiftMs;
        field += size;
      } else this.batch.times[row] = NaN;
      for (let c = 0; c < this.doubles; c++) {
        if (field + 4 > length) return at;
        const bytes = view.getInt32(field);
        field += 4;
        if (bytes >= 0) {
          if (field + bytes > length) return at;
          this.batch.columns[c]![row] = view.getFloat64(field);
          field += bytes;
        } else this.batch.columns[c]![row] = NaN;
      }
      at = field;
      if (++this.rows === this.batchRows) {
        this.push(this.batch);
        this.batch = this.emptyBatch();
        this.rows = 0;
      }
    }
  }
}
