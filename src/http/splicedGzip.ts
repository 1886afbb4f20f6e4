import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { constants, crc32, deflateRaw, deflateRawSync, type ZlibOptions } from 'node:zlib';

const deflateRawOf = promisify(deflateRaw);

/**
 * Bytes that many answers share (an aggregate's settled periods, the same in every answer while the
 * station's older readings stand): their raw deflate, ended by a full flush so that it depends on
 * nothing before or after it, is made once and spliced into the gzip of each answer that holds them.
 * A live station's year of aggregates is then compressed only in its changing parts.
 */
export class SharedBytes {
  private deflated?: Promise<Buffer>;
  private deflatedBytes = 0;
  private sha1?: Buffer;

  constructor(readonly bytes: Buffer) {}

  /** Its SHA-1, made once: an answer's tag names its shared parts by it (EncodedAnswer). */
  get digest(): Buffer {
    this.sha1 ??= createHash('sha1').update(this.bytes).digest();
    return this.sha1;
  }

  /** The memory it holds: the buffer its bytes are a view of, and its deflate once made. */
  get size(): number {
    return this.bytes.buffer.byteLength + this.deflatedBytes;
  }

  /** Its raw deflate, made the first time at the settings of the answer that first asks. */
  deflate(settings: ZlibOptions): Promise<Buffer> {
    if (!this.deflated) {
      const made = deflatePart(this.bytes, settings, constants.Z_FULL_FLUSH);
      this.deflated = made.then((bytes) => {
        this.deflatedBytes = bytes.length;
        return bytes;
      });
      // A failed deflate is not kept: the next answer tries again.
      made.catch(() => (this.deflated = undefined));
    }
    return this.deflated;
  }
}

/** What an answer is made of: its own bytes, and bytes it shares with others. */
export type AnswerPart = Buffer | SharedBytes;

/** The bytes of a part. */
export const bytesOf = (part: AnswerPart): Buffer => (part instanceof SharedBytes ? part.bytes : part);

// A gzip member's header (RFC 1952): deflate, no name or time, from an unknown system.
const gzipHeader = Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
// A final, empty block (fixed Huffman codes), ending a deflate stream whose last part was flushed.
const finalBlock = Buffer.from([0x03, 0x00]);
// Parts this small are deflated on the event loop: a trip to the thread pool costs more.
const smallPart = 4096;
// Larger parts are deflated as pieces of at least this size, at most one per thread of libuv's pool
// (four by default), side by side.
const pieceBytes = 128 * 1024;
const maxPieces = 4;

/**
 * The raw deflate of `bytes`, ended by `flush`. A large part is cut into pieces deflated side by side on
 * the thread pool, each but the last ended by a full flush, so that they join as one stream: the first
 * gzip of a year of hourly aggregates (3.7 MB) no longer waits for one thread to compress it all. Each
 * piece starts without the window of the one before, which costs a few hundred bytes of the output.
 */
function deflatePart(bytes: Buffer, settings: ZlibOptions, flush: number): Promise<Buffer> {
  if (bytes.length < smallPart) return Promise.resolve(deflateRawSync(bytes, { ...settings, finishFlush: flush }));
  const pieces = Math.max(1, Math.min(maxPieces, Math.floor(bytes.length / pieceBytes)));
  const size = Math.ceil(bytes.length / pieces);
  return Promise.all(Array.from({ length: pieces }, (_, i) => deflateRawOf(bytes.subarray(i * size, (i + 1) * size), {
    ...settings, finishFlush: i === pieces - 1 ? flush : constants.Z_FULL_FLUSH,
  }))).then((deflated) => (deflated.length === 1 ? deflated[0]! : Buffer.concat(deflated)));
}

/**
 * The gzip of `parts` in order: each shared part's kept deflate, each other part deflated now (a full
 * flush between parts, so each stands alone), the stream ended, and the CRC and length of them all,
 * read part by part: the parts are never joined into one buffer. Any gzip decoder reads it as one member.
 */
export async function splicedGzip(parts: readonly AnswerPart[], settings: ZlibOptions): Promise<Buffer> {
  const owned = parts.filter((part) => part instanceof SharedBytes || part.length > 0);
  const deflated = await Promise.all(owned.map((part, i) => part instanceof SharedBytes ? part.deflate(settings)
    : deflatePart(part, settings, i === owned.length - 1 ? constants.Z_FINISH : constants.Z_FULL_FLUSH)));
  const last = owned[owned.length - 1];
  const ended = last === undefined || last instanceof SharedBytes ? [finalBlock] : [];
  let crc = 0;
  let length = 0;
  for (const bytes of parts.map(bytesOf)) {
    // An empty buffer may have no memory behind it, and zlib takes a null one as a call for the initial CRC (0).
    if (bytes.length === 0) continue;
    crc = crc32(bytes, crc);
    length += bytes.length;
  }
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(length >>> 0, 4);
  return Buffer.concat([gzipHeader, ...deflated, ...ended, trailer]);
}
