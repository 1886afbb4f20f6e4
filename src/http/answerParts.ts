import { createHash } from 'node:crypto';

/**
 * Bytes that many answers share (an aggregate's settled periods, the same in every answer while the
 * station's older readings stand): kept once, and named in each answer's tag by their digest, so that
 * an answer holding them is neither joined nor hashed whole to be tagged (EncodedAnswer).
 */
export class SharedBytes {
  private sha1?: Buffer;

  constructor(readonly bytes: Buffer) {}

  /** Its SHA-1, made once. */
  get digest(): Buffer {
    this.sha1 ??= createHash('sha1').update(this.bytes).digest();
    return this.sha1;
  }

  /** The memory it holds: the buffer its bytes are a view of. */
  get size(): number {
    return this.bytes.buffer.byteLength;
  }
}

/** What an answer is made of: its own bytes, and bytes it shares with others. */
export type AnswerPart = Buffer | SharedBytes;

/** The bytes of a part. */
export const bytesOf = (part: AnswerPart): Buffer => (part instanceof SharedBytes ? part.bytes : part);
