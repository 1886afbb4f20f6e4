import { Transform, type TransformCallback } from 'node:stream';

/** How a column of a binary COPY is read: the PostgreSQL types the answers need. */
export type BinaryColumn = 'timestamptz' | 'float8' | 'text';

/** A column's values: timestamps as microseconds since 1970 (UTC), doubles as numbers, text as strings. */
export type ColumnValues = (bigint | number | string | null)[];

/** Rows of a binary COPY, column by column. */
export type ColumnBatch = { rows: number; columns: ColumnValues[] };

const signature = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
// PostgreSQL counts timestamps from 2000-01-01; Parquet and JavaScript from 1970-01-01.
const epochShiftMicros = 946_684_800_000_000n;

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
      if (buffer.length < 19) return 0;
      if (!buffer.subarray(0, 11).equals(signature)) throw new Error('not a binary COPY');
      at = 19 + buffer.readInt32BE(15);
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
