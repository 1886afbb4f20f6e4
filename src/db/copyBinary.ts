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
 * Reads `COPY ... TO STDOUT (format binary)` into batches of `batchRows` rows, column by column: the
 * typed values come straight from the wire, with no text to format and parse again (a timestamp is
 * eight bytes, not 24 characters), and memory holds one batch whatever the number of rows.
 */
export class CopyBinaryReader extends Transform {
  private pending: Buffer = Buffer.alloc(0);
  private headerRead = false;
  private batch: ColumnBatch;

  constructor(private readonly types: readonly BinaryColumn[], private readonly batchRows: number) {
    // One batch waits while the one before is used: COPY then waits too, rather than filling memory.
    super({ readableObjectMode: true, readableHighWaterMark: 1 });
    this.batch = this.emptyBatch();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    try {
      this.pending = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
      const used = this.readRows(this.pending);
      this.pending = this.pending.subarray(used);
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _flush(done: TransformCallback): void {
    if (this.pending.length) return done(new Error('binary COPY ended inside a row'));
    if (this.batch.rows) this.push(this.batch);
    done();
  }

  private emptyBatch(): ColumnBatch {
    return { rows: 0, columns: this.types.map(() => []) };
  }

  /** Reads the whole rows in `buffer`, returning the bytes used. */
  private readRows(buffer: Buffer): number {
    let at = 0;
    if (!this.headerRead) {
      at = tuplesStart(buffer);
      if (at < 0) return 0;
      this.headerRead = true;
    }
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
