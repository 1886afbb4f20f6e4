import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';
import { giveBuffer, takeBuffer } from './bufferPool.js';

/** A failure of the body itself, typed as raw-body types them so that bodyProblem maps both alike. */
export type BodyError = Error & { type?: string; status?: number; limit?: number };

function bodyError(message: string, type: string, status: number, limit?: number): BodyError {
  return Object.assign(new Error(message), { type, status, limit });
}

/** The request's bytes after its Content-Encoding (gzip, deflate, br or none); a 415 error for any other. */
function decoded(req: IncomingMessage): Readable {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity') return req;
  if (encoding === 'gzip' || encoding === 'deflate') return req.pipe(createUnzip());
  if (encoding === 'br') return req.pipe(createBrotliDecompress());
  throw bodyError(`Unsupported Content-Encoding: ${encoding}`, 'encoding.unsupported', 415);
}

/**
 * A request body read into one buffer as it arrives, so that its start can be worked on while the rest
 * is on its way; `whole()` gives all of it. The limit holds for the decoded bytes, and is checked from
 * Content-Length before anything is read. Failures (too large, cut short, not decompressing, an unknown
 * encoding) are kept, never thrown at once: they reject the next `more()` or `whole()`, so a body whose
 * request is refused for another reason first (no key) never raises an unheard error.
 */
export class ArrivingBody {
  private buffer: Buffer;
  private length = 0;
  private ended = false;
  private failure: BodyError | null = null;
  private readonly waiting = new Set<() => void>();
  private stop: () => void = () => {};

  constructor(req: IncomingMessage, private readonly limit: number) {
    const announced = req.headers['content-length'] === undefined ? null : Number(req.headers['content-length']);
    const identity = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase() === 'identity';
    const expected = identity && announced !== null && Number.isSafeInteger(announced) ? announced : null;
    this.buffer = takeBuffer(Math.min(expected ?? 64 * 1024, limit + 1));
    if (expected !== null && expected > limit) {
      this.fail(bodyError('request entity too large', 'entity.too.large', 413, limit));
      return;
    }
    let source: Readable;
    try {
      source = decoded(req);
    } catch (error) {
      this.fail(error as BodyError);
      return;
    }
    const onData = (chunk: Buffer) => {
      if (this.length + chunk.length > limit) {
        this.fail(bodyError('request entity too large', 'entity.too.large', 413, limit));
        this.stop();
        return;
      }
      if (this.length + chunk.length > this.buffer.length) {
        const grown = takeBuffer(Math.min(Math.max(this.buffer.length * 2, this.length + chunk.length), limit + 1));
        this.buffer.copy(grown, 0, 0, this.length);
        // Not given back: a view of it may still be read.
        this.buffer = grown;
      }
      chunk.copy(this.buffer, this.length);
      this.length += chunk.length;
      this.notify();
    };
    const onEnd = () => {
      if (expected !== null && this.length !== expected) {
        this.fail(bodyError('request size did not match content length', 'request.size.invalid', 400));
      } else {
        this.ended = true;
        this.notify();
      }
      this.stop();
    };
    const onAborted = () => {
      this.fail(bodyError('request aborted', 'request.aborted', 400));
      this.stop();
    };
    const onError = (error: BodyError) => {
      this.fail(error);
      this.stop();
    };
    this.stop = () => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('error', onError);
      req.off('aborted', onAborted);
      // An error after this is the client's going away: nobody waits for the body any more.
      source.on('error', () => {});
      // What is still to come is drained rather than kept.
      source.resume();
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.on('error', onError);
    req.once('aborted', onAborted);
  }

  /** The bytes received so far: a view of the buffer, valid until more arrive. */
  view(): Buffer {
    return this.buffer.subarray(0, this.length);
  }

  /** Whether every byte has arrived. */
  get complete(): boolean {
    return this.ended;
  }

  /**
   * Resolves true once more bytes have arrived or the body has ended, false when `untilMs` (epoch ms)
   * comes first; rejects with the body's failure.
   */
  more(untilMs = Infinity): Promise<boolean> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(true);
    return new Promise((resolve, reject) => {
      const woken = () => {
        clearTimeout(timer);
        this.waiting.delete(woken);
        if (this.failure) reject(this.failure);
        else resolve(true);
      };
      const timer = untilMs === Infinity ? undefined : setTimeout(() => {
        this.waiting.delete(woken);
        resolve(false);
      }, Math.max(0, untilMs - Date.now()));
      this.waiting.add(woken);
    });
  }

  /** The whole body, once it has all arrived. */
  async whole(): Promise<Buffer> {
    while (!this.ended) await this.more();
    return this.view();
  }

  /** Stops reading: the answer does not need the rest (the request was refused). */
  discard(): void {
    if (this.ended || this.failure) return;
    this.fail(bodyError('request body discarded', 'request.discarded', 400));
    this.stop();
  }

  /**
   * Stops reading, and gives the buffer back for another body: once the request is answered and nothing
   * reads the bytes any more (they were copied into the rows, or parsed).
   */
  release(): void {
    this.discard();
    giveBuffer(this.buffer);
    this.buffer = Buffer.alloc(0);
    this.length = 0;
  }

  private fail(error: BodyError): void {
    if (this.failure || this.ended) return;
    this.failure = error;
    this.notify();
  }

  private notify(): void {
    for (const woken of [...this.waiting]) woken();
  }
}
