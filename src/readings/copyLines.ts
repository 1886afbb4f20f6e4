/**
 * A batch's COPY text in one growing buffer, one line per reading, with each line's end and its
 * timestamp in epoch milliseconds beside it. Readings are written into it straight from the request's
 * bytes or from parsed values; no string or object per reading is kept.
 */
export class CopyLines {
  private buffer = Buffer.allocUnsafe(64 * 1024);
  /** Bytes written: lines whole, and the line being written. */
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
    }
    return this.buffer;
  }

  /** Writes ASCII text at the end of the line being written. */
  writeAscii(text: string): void {
    const buffer = this.reserve(text.length);
    for (let k = 0; k < text.length; k++) buffer[this.length++] = text.charCodeAt(k);
  }

  writeByte(byte: number): void {
    this.reserve(1)[this.length++] = byte;
  }

  /** Copies bytes of another buffer (ASCII already checked) to the end of the line being written. */
  writeBytes(source: Buffer, start: number, end: number): void {
    const buffer = this.reserve(end - start);
    // Most pieces are a number or a word: a loop copies those faster than a call into the runtime.
    if (end - start > 64) {
      source.copy(buffer, this.length, start, end);
      this.length += end - start;
    } else {
      for (let k = start; k < end; k++) buffer[this.length++] = source[k]!;
    }
  }

  /** Ends the line being written (its newline included) as the line of the reading at `ms`. */
  endLine(ms: number): void {
    this.ends.push(this.length);
    this.times.push(ms);
  }

  /** Drops the line being written, back to the end of the last whole line. */
  dropLine(): void {
    this.length = this.ends.length === 0 ? 0 : this.ends[this.ends.length - 1]!;
  }

  /** Appends a whole line of any text (UTF-8), newline included. */
  appendLine(line: string, ms: number): void {
    const bytes = Buffer.byteLength(line);
    this.reserve(bytes).write(line, this.length, 'utf8');
    this.length += bytes;
    this.endLine(ms);
  }

  /** Appends line `i` of another batch. */
  appendFrom(other: CopyLines, i: number): void {
    this.writeBytes(other.buffer, other.start(i), other.ends[i]!);
    this.endLine(other.times[i]!);
  }

  /** Line `i` as text, newline included. */
  line(i: number): string {
    return this.buffer.toString('utf8', this.start(i), this.ends[i]);
  }

  /** Lines [from, to) as one view of the buffer. */
  bytes(from: number, to: number): Buffer {
    return this.buffer.subarray(this.start(from), to === 0 ? 0 : this.ends[to - 1]);
  }

  private start(i: number): number {
    return i === 0 ? 0 : this.ends[i - 1]!;
  }
}
