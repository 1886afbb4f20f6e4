import type { Context } from 'koa';
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

/**
 * Sends a file that never changes: Content-Length, a strong ETag (its SHA-256), Repr-Digest (RFC 9530),
 * immutable caching, and byte ranges (206, or 416 past the end; If-Range honoured), so that a Parquet
 * reader can fetch its footer and then the column chunks it needs. Never compressed: the bytes given
 * are the bytes whose digest is published.
 */
export function sendFile(ctx: Context, bytes: Buffer, type: string, sha256Hex: string): void {
  const etag = `"sha256-${sha256Hex}"`;
  ctx.compress = false;
  ctx.set('ETag', etag);
  ctx.set('Repr-Digest', `sha-256=:${Buffer.from(sha256Hex, 'hex').toString('base64')}:`);
  ctx.set('Accept-Ranges', 'bytes');
  ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
  ctx.type = type;
  const ifRange = ctx.get('If-Range');
  const range = ifRange && ifRange !== etag ? null : byteRange(ctx.get('Range') || undefined, bytes.length);
  if (range === 'unsatisfiable') {
    throw new Problem(416, 'range-not-satisfiable', 'Range Not Satisfiable', `the file has ${bytes.length} bytes`, {}, { 'Content-Range': `bytes */${bytes.length}` });
  }
  if (range === null) {
    ctx.body = bytes;
    return;
  }
  ctx.status = 206;
  ctx.set('Content-Range', `bytes ${range.start}-${range.end}/${bytes.length}`);
  ctx.body = bytes.subarray(range.start, range.end + 1);
}
