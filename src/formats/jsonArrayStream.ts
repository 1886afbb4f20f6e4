import { StringDecoder } from 'node:string_decoder';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Turns COPY's text output of one JSON value per row into `head` + `[row,row,...]` + a tail made from the
 * row count: a JSON answer of any length with flat memory. COPY's text format doubles every backslash
 * (JSON text holds no raw control character, so nothing else is escaped); that is undone here.
 */
export class JsonArrayStream extends Transform {
  private readonly decoder = new StringDecoder('utf8');
  private carry = '';
  private count = 0;

  constructor(
    private readonly head: string,
    private readonly tail: (count: number) => string,
    /**
     * Turns the rows read into the JSON values to give (to add fields computed outside the database): it
     * may keep some back for later, or leave some out.
     */
    private readonly rows: (lines: string[]) => string[] = (lines) => lines,
    /** The values kept back, at the end. */
    private readonly rest: () => string[] = () => [],
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const text = this.carry + this.decoder.write(chunk);
    const end = text.lastIndexOf('\n');
    if (end === -1) {
      this.carry = text;
      return callback();
    }
    this.carry = text.slice(end + 1);
    try {
      const out = this.written(this.rows(text.slice(0, end).split('\n').map((line) => line.replaceAll('\\\\', '\\'))));
      callback(null, out || undefined);
    } catch (error) {
      callback(error as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    try {
      const rest = this.written(this.rest());
      callback(null, `${rest}${this.count === 0 ? `${this.head}[` : ''}]${this.tail(this.count)}`);
    } catch (error) {
      callback(error as Error);
    }
  }

  private written(values: string[]): string {
    let out = '';
    for (const value of values) out += (this.count++ === 0 ? `${this.head}[` : ',') + value;
    return out;
  }
}
