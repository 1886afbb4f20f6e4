import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { heldTag } from '../../http/middleware/etags.js';
import { Problem } from '../../http/problem.js';

/** A single byte range of a file of `size` bytes, from a Range header: inclusive bounds. */
type ByteRange = { start: number; end: number };

/**
 * The one range a `Range: bytes=…` header asks for (RFC 9110, 14.1.2): `a-b`, `a-` or `-n`. Null when
 * there is no such header or it asks for several ranges or another unit (the whole file is then sent,
 * as the RFC allows); 'unsatisfiable' when it starts past the end.
 */
export function byteRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  const match = header?.trim().match(/^bytes=\s*(\d*)\s*-\s*(\d*)\s*$/);
  if (!match || (match[1] === '' && match[2] === '')) return null;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    if (suffix === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  if (end < start) return null;
  return { start, end };
}

/** A file that never changes, by its size and digest, with the reader of its bytes. */
export type KeptFile = {
  size: number;
  sha256: string;
  type: string;
  /** A stream of its bytes `start` to `end` (inclusive); `whole` when that is the whole file. */
  read: (start: number, end: number, whole: boolean) => Readable;
};

/**
 * Sends a file that never changes: Content-Length, a strong ETag (its SHA-256), Repr-Digest (RFC 9530),
 * immutable caching, If-None-Match (304), and byte ranges (206, or 416 past the end; If-Range honoured),
 * so that a Parquet reader can fetch its footer and then the column chunks it needs. The answer is
 * decided from the size and digest alone: a HEAD or a 304 reads none of the bytes, a range only its own.
 * Never compressed: the bytes given are the bytes whose digest is published.
 */
export function sendFile(ctx: Context, file: KeptFile): void {
  const etag = `"sha256-${file.sha256}"`;
  ctx.compress = false;
  ctx.set('ETag', etag);
  ctx.set('Repr-Digest', `sha-256=:${Buffer.from(file.sha256, 'hex').toString('base64')}:`);
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
  ctx.type = file.type;
  const asked = ctx.get('If-None-Match');
  // If-None-Match before Range (RFC 9110, 13.2.2).
  if (asked && heldTag(asked, etag) !== undefined) {
    ctx.status = 304;
    return;
  }
  const ifRange = ctx.get('If-Range');
  const range = ifRange && ifRange !== etag ? null : byteRange(ctx.get('Range') || undefined, file.size);
  if (range === 'unsatisfiable') {
    throw new Problem(416, 'range-not-satisfiable', 'Range Not Satisfiable', `the file has ${file.size} bytes`, {}, { 'Content-Range': `bytes */${file.size}` });
  }
  const { start, end } = range ?? { start: 0, end: file.size - 1 };
  if (range) {
    ctx.status = 206;
    ctx.set('Content-Range', `bytes ${start}-${end}/${file.size}`);
  }
  const body = ctx.method === 'HEAD' ? Readable.from([]) : file.read(start, end, range === null);
  // The status is sent already when the bytes fail: end the connection, so that the client sees a cut
  // answer (short of its Content-Length) rather than waiting.
  body.once('error', () => ctx.res.destroy());
  ctx.body = body;
  ctx.length = end - start + 1;
}
