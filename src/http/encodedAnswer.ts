import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress, gzip } from 'node:zlib';
import type { Context } from 'koa';
import { compressibleType, compressionFor, compressOnce, compressionThreshold, negotiateEncoding, type CompressionSettings, type ContentCoding } from './middleware/compression.js';
import { bytesOf, SharedBytes, type AnswerPart } from './answerParts.js';

const brotliOf = promisify(brotliCompress);
const gzipOf = promisify(gzip);

/**
 * An answer made once and sent as often as it is asked for: its bytes, their strong ETag and each
 * compressed form, made the first time a client asks for it, off the event loop. Without it every request
 * for a kept answer was hashed and compressed again (for a year of hourly aggregates, most of the time of
 * an answer asked again). It may be made of parts some of which it shares with other answers
 * (SharedBytes: a live station's settled periods): then its tag does not read those again, and its
 * parts are joined into one buffer only when a client takes it, as it is or compressed.
 */
export class EncodedAnswer {
  readonly etag: string;
  /** Its length in bytes. */
  readonly length: number;
  private readonly parts: readonly AnswerPart[];
  private joined: Buffer | undefined;
  private readonly forms = new Map<ContentCoding, Promise<Buffer>>();
  private formBytes = 0;

  /**
   * `body`: its bytes, or the parts they are made of when some are shared with other answers. `compression`: how hard to compress it, by default as the middleware would for its size.
   */
  constructor(body: Buffer | readonly AnswerPart[], readonly type: string, private readonly compression?: CompressionSettings) {
    this.parts = Buffer.isBuffer(body) ? [body] : body;
    this.joined = this.parts.length === 1 ? bytesOf(this.parts[0]!) : undefined;
    this.length = this.parts.reduce((sum, part) => sum + bytesOf(part).length, 0);
    this.etag = tagOf(this.parts);
  }

  /** Its bytes as one buffer, joined the first time they are asked for. */
  get bytes(): Buffer {
    this.joined ??= Buffer.concat(this.parts.map(bytesOf), this.length);
    return this.joined;
  }

  /**
   * The memory it holds alone: its own parts (a shared one is counted where it is kept, with its deflate),
   * their join once made, and the compressed forms made so far.
   */
  get size(): number {
    const own = this.parts.reduce((sum, part) => sum + (part instanceof SharedBytes ? 0 : part.length), 0);
    return own + (this.parts.length > 1 && this.joined ? this.length : 0) + this.formBytes;
  }

  /**
   * Answers the request with it, in the content coding the compression middleware would have chosen,
   * which then leaves the answer as it is.
   */
  async send(ctx: Context): Promise<void> {
    ctx.type = this.type;
    ctx.set('ETag', this.etag);
    // As the compression middleware does: HEAD, small answers and types that do not compress (Parquet,
    // compressed already) are sent as they are.
    const coding = ctx.method === 'HEAD' || this.length < compressionThreshold || !compressibleType(this.type) ? 'identity' : negotiateEncoding(ctx);
    if (coding === 'identity') {
      ctx.body = this.bytes;
      return;
    }
    ctx.body = await this.form(coding);
    ctx.set('Content-Encoding', coding);
  }

  private form(coding: Exclude<ContentCoding, 'identity'>): Promise<Buffer> {
    let form = this.forms.get(coding);
    if (!form) {
      const settings = this.compression ?? compressionFor(this.length);
      const made = coding === 'br' ? brotliOf(this.bytes, settings.br) : gzipOf(this.bytes, settings.gzip);
      form = made.then((bytes) => {
        this.formBytes += bytes.length;
        return bytes;
      });
      this.forms.set(coding, form);
      // A failed compression is not kept: the next request tries again.
      form.catch(() => this.forms.delete(coding));
    }
    return form;
  }
}

/**
 * A strong ETag: the SHA-1 of the bytes, as the conditional GET computes for any other answer; for an
 * answer holding shared parts, the SHA-1 of its parts in order, each given by its length and a shared
 * one by its kept SHA-1 rather than its bytes. A live station's year of hourly periods is then not hashed
 * again for each new reading. Answers made of the same parts (every instance cuts a station's aggregate
 * at the same settled mark) carry the same tag; other bytes, another tag.
 */
function tagOf(parts: readonly AnswerPart[]): string {
  const hash = createHash('sha1');
  if (!parts.some((part) => part instanceof SharedBytes)) {
    for (const part of parts) hash.update(bytesOf(part));
  } else {
    for (const part of parts) {
      const head = Buffer.alloc(5);
      head.writeUInt8(part instanceof SharedBytes ? 1 : 0, 0);
      head.writeUInt32BE(bytesOf(part).length, 1);
      hash.update(head).update(part instanceof SharedBytes ? part.digest : part);
    }
  }
  return `"${hash.digest('base64url')}"`;
}

/**
 * A fixed answer (one per release and setting), made on its first request and kept with its tag and
 * each compressed form, compressed hard once rather than on every request.
 */
export function fixedAnswer(make: () => Buffer | string | object, type = 'application/json; charset=utf-8'): () => EncodedAnswer {
  let answer: EncodedAnswer | undefined;
  return () => {
    if (!answer) {
      const body = make();
      answer = new EncodedAnswer(Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), type, compressOnce);
    }
    return answer;
  };
}
