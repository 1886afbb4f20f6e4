import compress from 'koa-compress';
import type { Middleware } from 'koa';
import { constants } from 'node:zlib';

/**
 * gzip or brotli, as the client's Accept-Encoding prefers (brotli first when both are equally welcome),
 * for every compressible type (JSON, GeoJSON, CSV, HTML, scripts, styles) above 1 KiB. Streams are
 * compressed as they flow, on libuv's thread pool, so a download keeps its flat memory. The settings are
 * chosen for streams (bench/compression): brotli's default quality 11 is far too slow for a download, and
 * with its default 4 MiB window brotli holds back its first byte until it has read megabytes (half a
 * second of a download); quality 4 with a 256 KiB window, and gzip's level 4, answer at once, keep up
 * with COPY and still shrink CSV several times.
 */
export function compression(): Middleware {
  return compress({
    threshold: 1024,
    br: { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_LGWIN]: 18 } },
    gzip: { level: 4 },
    deflate: false,
    encodingPreference: ['br', 'gzip', 'identity'],
  });
}
