import type { IncomingMessage } from 'node:http';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createUnzip } from 'node:zlib';

/** A failure of the body itself, typed as raw-body types them so that bodyProblem maps both alike. */
export type BodyError = Error & { type?: string; status?: number; limit?: number };

function bodyError(message: string, type: string, status: number, limit?: number): BodyError {
  return Object.assign(new Error(message), { type, status, limit });
}

/**
 * The request's whole body after its Content-Encoding (gzip, deflate, br or none), at most `limit`
 * decoded bytes. Called only once the request is known to be one worth reading (its key is valid).
 *
 * The bytes belong to the request that read them: each call collects its own chunks, and nothing of
 * one body is kept for another. When the body is refused (too large, not decompressing, cut short),
 * its decoder is destroyed at once and whatever the client still sends is drained undecoded, so a small
 * compressed body can never make the service inflate more than `limit` bytes.
 */
export function readBody(req: IncomingMessage, limit: number, stallMs = Infinity): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    const announced = req.headers['content-length'] === undefined ? null : Number(req.headers['content-length']);
    const expected = encoding === 'identity' && announced !== null && Number.isSafeInteger(announced) ? announced : null;
    let decoder: Transform | null = null;
    const chunks: Buffer[] = [];
    let length = 0;
    let settled = false;

    // A body that stops arriving for `stallMs` is cut, as a download whose client stops reading is: a slow
    // upload cannot hold a connection of the ingest pool's callers for long.
    let stall: NodeJS.Timeout | undefined;
    const arrived = () => {
      clearTimeout(stall);
      if (stallMs !== Infinity) stall = setTimeout(() => finish(bodyError('request body stalled', 'request.stalled', 408)), stallMs);
    };
    const finish = (error: BodyError | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(stall);
      req.off('data', arrived);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('aborted', onAborted);
      req.off('error', onError);
      if (decoder) {
        decoder.off('data', onData);
        decoder.off('end', onEnd);
        decoder.off('error', onError);
        req.unpipe(decoder);
        decoder.destroy();
      }
      if (error) {
        // The rest is drained as it comes, never decoded; an error after this is the client going away.
        req.on('error', () => {});
        req.resume();
        reject(error);
      } else {
        resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
      }
    };
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) return finish(bodyError('request entity too large', 'entity.too.large', 413, limit));
      chunks.push(chunk);
    };
    const onEnd = () => {
      if (expected !== null && length !== expected) finish(bodyError('request size did not match content length', 'request.size.invalid', 400));
      else finish(null);
    };
    const onAborted = () => finish(bodyError('request aborted', 'request.aborted', 400));
    const onError = (error: BodyError) => finish(error);

    if (expected !== null && expected > limit) return finish(bodyError('request entity too large', 'entity.too.large', 413, limit));
    if (encoding === 'gzip' || encoding === 'deflate') decoder = createUnzip();
    else if (encoding === 'br') decoder = createBrotliDecompress();
    else if (encoding !== 'identity') return finish(bodyError(`Unsupported Content-Encoding: ${encoding}`, 'encoding.unsupported', 415));

    req.once('aborted', onAborted);
    req.on('error', onError);
    req.on('data', arrived);
    arrived();
    if (decoder) {
      decoder.on('data', onData);
      decoder.once('end', onEnd);
      decoder.on('error', onError);
      req.pipe(decoder);
    } else {
      req.on('data', onData);
      req.once('end', onEnd);
    }
  });
}
