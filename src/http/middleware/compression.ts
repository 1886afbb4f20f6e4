import compress from 'koa-compress';
import compressible from 'compressible';
import type { Context, Middleware } from 'koa';
import Negotiator from 'negotiator';
import { constants, type BrotliOptions, type ZlibOptions } from 'node:zlib';

export type ContentCoding = 'br' | 'gzip' | 'identity';

/** Answers under this many bytes are sent as they are: compressing them saves less than it costs. */
export const compressionThreshold = 1024;

/**
 * How hard to compress, by answer. Typical API answers (a reading, a page of notes, an aggregate of a
 * few hundred rows) are small, and brotli's quality 4 and gzip's level 4 shrink them well and quickly.
 * Streamed answers (downloads, histories) and large ones (a year of hourly aggregates) are another
 * matter: compression then competes for the same cores as PostgreSQL producing the rows and the client
 * reading them, and quality 4 cannot keep up with COPY, so they get brotli's quality 1 and gzip's level
 * 1, somewhat larger and several times faster. Brotli always uses a 256 KiB window: with its default 4
 * MiB window it holds back its first byte until it has read megabytes. Measured in bench/compression.
 */
export type CompressionSettings = { br: BrotliOptions; gzip: ZlibOptions };

const thorough: CompressionSettings = {
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_LGWIN]: 18 } },
  gzip: { level: 4 },
};
const swift: CompressionSettings = {
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_LGWIN]: 18 } },
  gzip: { level: 1 },
};
const swiftFrom = 256 * 1024;

/**
 * For a fixed answer compressed once and sent as often as it is asked for (the discovery and OpenAPI
 * documents, the changelog, the docs page and its assets): its cost is paid once per process, so harder
 * levels are worth it (the docs' script bundle is the largest of them).
 */
export const compressOnce: CompressionSettings = {
  br: { params: { [constants.BROTLI_PARAM_QUALITY]: 6, [constants.BROTLI_PARAM_LGWIN]: 22 } },
  gzip: { level: 9 },
};

/** The compression settings for an answer of `size` bytes, undefined for a stream. */
export function compressionFor(size: number | undefined): CompressionSettings {
  return size === undefined || size >= swiftFrom ? swift : thorough;
}

/**
 * Whether answers of a content type are compressed: those the mime database knows to compress (JSON,
 * GeoJSON, CSV, HTML, scripts, styles), not those compressed already (Parquet) or unknown. koa-compress's
 * own default, named so that answers kept already encoded follow the same rule.
 */
export const compressibleType = (type: string): boolean => compressible(type) === true;

// brotli first when both are equally welcome: smaller for the same effort.
const preference: ContentCoding[] = ['br', 'gzip', 'identity'];

/**
 * An Accept-Encoding that refuses every coding the service has (`identity;q=0`, `*;q=0`, a q below 0) is
 * answered without a coding, as RFC 9110 (12.5.3) allows: such a header is made `identity` before
 * compression and the kept answers negotiate, which would otherwise have no coding to name.
 */
export function identityWhenNothingAccepted(): Middleware {
  return async (ctx, next) => {
    const header = ctx.request.headers['accept-encoding'];
    if (header && header !== '*' && new Negotiator({ headers: { 'accept-encoding': header } }).encoding(preference) === undefined) {
      ctx.request.headers['accept-encoding'] = 'identity';
    }
    await next();
  };
}

/**
 * gzip or brotli, as the client's Accept-Encoding prefers (brotli first when both are equally welcome),
 * for every compressible type (JSON, GeoJSON, CSV, HTML, scripts, styles) above the threshold. Streams
 * are compressed as they flow, on libuv's thread pool, so a download keeps its flat memory. An answer
 * that comes already encoded (sendEncoded) is left as it is.
 */
export function compression(): Middleware {
  return compress({
    threshold: compressionThreshold,
    filter: compressibleType,
    br: (_type: string, size: number | undefined) => compressionFor(size).br,
    gzip: (_type: string, size: number | undefined) => compressionFor(size).gzip,
    deflate: false,
    zstd: false,
    encodingPreference: preference,
  });
}

/**
 * The content coding the compression middleware would choose for this request: the same negotiation
 * (q-values honoured, brotli first at equal preference, `*` meaning gzip, no header meaning identity),
 * for answers kept already encoded.
 */
export function negotiateEncoding(ctx: Context): ContentCoding {
  const header = ctx.request.headers['accept-encoding'];
  const accept = header === '*' ? 'gzip' : header || 'identity';
  return (new Negotiator({ headers: { 'accept-encoding': accept } }).encoding(preference, { preferred: preference }) as ContentCoding | undefined) ?? 'identity';
}
