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
    /** Rewrites each row's JSON text (to add fields computed outside the database). */
    private readonly decorate: (row: string) => string = (row) => row,
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
    let out = this.count === 0 ? `${this.head}[` : '';
    for (const line of text.slice(0, end).split('\n')) {
      out += (this.count++ === 0 ? '' : ',') + this.decorate(line.replaceAll('\\\\', '\\'));
    }
    callback(null, out);
  }

  override _flush(callback: TransformCallback): void {
    callback(null, `${this.count === 0 ? `${this.head}[` : ''}]${this.tail(this.count)}`);
  }
}
