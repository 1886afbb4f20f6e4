import { postgresEpochMs, tupleFields } from '../../db/copyBinary.js';


/**
 * A batch's rows in COPY's binary format, in one growing buffer, one tuple per reading, with each row's
 * end and its timestamp in epoch milliseconds beside it. Readings are written into it from their parsed
 * values; no string or object per reading is kept.
 *
 * Binary, not text: the database then takes each timestamp as eight bytes and each measurement as a
 * double, instead of parsing their text (a large part of a text COPY's time in PostgreSQL). The doubles
 * are the ones JSON.parse gives, so a value is stored as it would be from its text.
 */
export class CopyRows {
  // Owned by this batch alone, and left to the collector with it: no buffer is shared between batches.
  private buffer = Buffer.allocUnsafe(64 * 1024);
  // The same bytes, for numbers: a DataView writes a big-endian double or integer in place, inlined.
  private view = viewOf(this.buffer);
  /** Bytes written: rows whole, and the row being written. */
  length = 0;
  readonly ends: number[] = [];
  readonly times: number[] = [];

  get count(): number {
    return this.ends.length;
  }

  /** Room for `bytes` more, growing the buffer when needed. */
  reserve(bytes: number): Buffer {
    if (this.length + bytes > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.length + bytes));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
      this.view = viewOf(grown);
    }
    return this.buffer;
  }

  /** Starts a row of `fields` fields. */
  startRow(fields: number): void {
    const buffer = this.reserve(2);
    buffer[this.length++] = fields >> 8;
    buffer[this.length++] = fields & 0xff;
  }

  /** Copies bytes of another buffer, with no length. */
  private writeBytes(source: Buffer, start: number, end: number): void {
    source.copy(this.reserve(end - start), this.length, start, end);
    this.length += end - start;
  }

  /** A null field. */
  writeNull(): void {
    this.writeInt32(-1);
  }

  /** A float8 field; a negative zero is stored as zero, as its text would be. */
  writeFloat8(value: number): void {
    this.writeInt32(8);
    this.reserve(8);
    this.view.setFloat64(this.length, value === 0 ? 0 : value);
    this.length += 8;
  }

  /** A timestamptz field: microseconds from 2000-01-01 UTC, PostgreSQL's epoch. */
  writeTimestamp(ms: number): void {
    this.writeInt32(8);
    this.reserve(8);
    const micros = (ms - postgresEpochMs) * 1000;
    if (Number.isSafeInteger(micros)) {
      const high = Math.floor(micros / 2 ** 32);
      this.view.setInt32(this.length, high);
      this.view.setUint32(this.length + 4, micros - high * 2 ** 32);
    } else {
      this.view.setBigInt64(this.length, BigInt(ms - postgresEpochMs) * 1000n);
    }
    this.length += 8;
  }

  /** A text field of any string (UTF-8), or null. */
  writeText(text: string | null): void {
    if (text === null) return this.writeNull();
    const bytes = Buffer.byteLength(text);
    this.writeInt32(bytes);
    this.reserve(bytes).write(text, this.length, 'utf8');
    this.length += bytes;
  }

  /** A text field of a word known ahead (a quality flag): its bytes made once. */
  writeWord(word: Buffer): void {
    this.writeField(word, 0, word.length);
  }

  /** A field of bytes of another buffer (ASCII or UTF-8 already checked). */
  writeField(source: Buffer, start: number, end: number): void {
    this.writeInt32(end - start);
    this.writeBytes(source, start, end);
  }

  /** A jsonb field of JSON text, or null: its version byte, then the text. */
  writeJsonb(json: string | null): void {
    if (json === null) return this.writeNull();
    const bytes = Buffer.byteLength(json);
    this.writeInt32(1 + bytes);
    const buffer = this.reserve(1 + bytes);
    buffer[this.length++] = jsonbVersion;
    this.length += buffer.write(json, this.length, 'utf8');
  }

  /** Ends the row being written as the row of the reading at `ms`. */
  endRow(ms: number): void {
    this.ends.push(this.length);
    this.times.push(ms);
  }

  /** Appends row `i` of another batch. */
  appendFrom(other: CopyRows, i: number): void {
    this.writeBytes(other.buffer, other.start(i), other.ends[i]!);
    this.endRow(other.times[i]!);
  }

  /** Appends row `i` of another batch with field `field` (a text field) made `text`. */
  appendWith(other: CopyRows, i: number, field: number, text: string): void {
    const fields = other.fields(i);
    this.startRow(fields.length);
    fields.forEach((value, f) => {
      if (f === field) this.writeText(text);
      else if (value === null) this.writeNull();
      else this.writeField(value, 0, value.length);
    });
    this.endRow(other.times[i]!);
  }

  /** The fields of row `i`, each as a view of its bytes, or null. */
  fields(i: number): (Buffer | null)[] {
    return tupleFields(this.buffer, this.start(i))!;
  }

  /** Rows [from, to) as one view of the buffer. */
  bytes(from: number, to: number): Buffer {
    return this.buffer.subarray(this.start(from), to === 0 ? 0 : this.ends[to - 1]);
  }

  private writeInt32(value: number): void {
    this.reserve(4);
    this.view.setInt32(this.length, value);
    this.length += 4;
  }

  private start(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!;
  }
}

const viewOf = (buffer: Buffer) => new DataView(buffer.buffer, buffer.byteOffset, buffer.length);

// jsonb's binary form: a version byte, then the JSON text.
const jsonbVersion = 1;
