import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { brotliCompress } from 'node:zlib';
import type { Context } from 'koa';
import { compressibleType, compressionFor, compressOnce, compressionThreshold, negotiateEncoding, type CompressionSettings, type ContentCoding } from './middleware/compression.js';
import { SharedBytes, splicedGzip, type AnswerPart } from './splicedGzip.js';

const brotliOf = promisify(brotliCompress);

/**
 * An answer made once and sent as often as it is asked for: its bytes, their strong ETag (the SHA-1 the
 * conditional GET would compute) and each compressed form, made the first time a client asks for it, off
 * the event loop. Without it every request for a kept answer was hashed and compressed again (for a
 * year of hourly aggregates, 2 MB, most of the time of an answer asked again). Its gzip form is made by
 * splicedGzip: a large answer in pieces side by side, the bytes it shares with other answers (SharedBytes)
 * from the deflate kept with them.
 */
export class EncodedAnswer {
  readonly bytes: Buffer;
  readonly etag: string;
  private readonly parts: readonly AnswerPart[] | undefined;
  private readonly forms = new Map<ContentCoding, Promise<Buffer>>();
  private formBytes = 0;

  /**
   * `body`: its bytes, or the parts they are made of when some are shared with other answers (gzipped
   * once). `compression`: how hard to compress it, by default as the middleware would for its size.
   */
  constructor(body: Buffer | readonly AnswerPart[], readonly type: string, private readonly compression?: CompressionSettings) {
    if (Buffer.isBuffer(body)) {
      this.bytes = body;
    } else {
      this.bytes = Buffer.concat(body.map((part) => (part instanceof SharedBytes ? part.bytes : part)));
      this.parts = body.some((part) => part instanceof SharedBytes) ? body : undefined;
    }
    this.etag = `"${createHash('sha1').update(this.bytes).digest('base64url')}"`;
  }

  /** The memory it holds: its bytes and the compressed forms made so far. */
  get size(): number {
    return this.bytes.length + this.formBytes;
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
    const coding = ctx.method === 'HEAD' || this.bytes.length < compressionThreshold || !compressibleType(this.type) ? 'identity' : negotiateEncoding(ctx);
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
      const settings = this.compression ?? compressionFor(this.bytes.length);
      const made = coding === 'br' ? brotliOf(this.bytes, settings.br)
        : splicedGzip(this.parts ?? [this.bytes], this.bytes, settings.gzip);
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
