import { createHash } from 'node:crypto';
import type { Context, Middleware } from 'koa';

const suffixOf: Record<string, string> = { br: '-br', gzip: '-gzip' };

/** The opaque tags an If-None-Match header lists, without W/ and quotes; `*` as is. */
function listedTags(header: string): string[] {
  return header.split(',').map((tag) => tag.trim().replace(/^W\//, '').replace(/^"|"$/g, ''));
}

const withoutEncoding = (tag: string) => tag.replace(/-(br|gzip)$/, '');

/**
 * The tag of `If-None-Match` (`asked`) that names `tag`, or `*`; undefined when none does. It compares
 * weakly (RFC 9110, 13.1.2): the same tag in another encoding matches too.
 */
export function heldTag(asked: string, tag: string): string | undefined {
  const current = tag.replace(/^W\//, '').replace(/^"|"$/g, '');
  return listedTags(asked).find((listed) => listed === '*' || withoutEncoding(listed) === current);
}

const isBuffered = (body: unknown): body is string | Buffer => typeof body === 'string' || Buffer.isBuffer(body);

/**
 * A strong ETag for every buffered 200 answer to GET or HEAD (its identity bytes' SHA-1, unless the route
 * set one), and 304 Not Modified, with no body, when If-None-Match names it (or, without one, when
 * If-Modified-Since is not before the answer's Last-Modified). Runs where JSON bodies are
 * already text (outside the problems middleware) and inside compression, so it sees the identity bytes.
 * Streamed answers (downloads, histories) have no tag: their bytes are not known before they are sent.
 */
export function conditionalGet(): Middleware {
  return async (ctx, next) => {
    await next();
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.status !== 200 || !isBuffered(ctx.body)) return;
    let tag = ctx.response.get('ETag');
    if (!tag) {
      tag = `"${createHash('sha1').update(ctx.body).digest('base64url')}"`;
      ctx.set('ETag', tag);
    }
    const asked = ctx.get('If-None-Match');
    if (!asked) {
      // Only without If-None-Match, which takes precedence (RFC 9110, 13.2.2).
      const since = Date.parse(ctx.get('If-Modified-Since'));
      const modified = Date.parse(ctx.response.get('Last-Modified'));
      if (!Number.isNaN(since) && !Number.isNaN(modified) && modified <= since) {
        ctx.status = 304;
        ctx.body = null;
      }
      return;
    }
    // The 304 names the representation the client holds.
    const held = heldTag(asked, tag);
    if (held !== undefined) {
      if (held !== '*') ctx.set('ETag', `"${held}"`);
      ctx.status = 304;
      ctx.body = null;
      // No body, so no coding of one: an answer sent already encoded (EncodedAnswer) names none either.
      ctx.remove('Content-Encoding');
    }
  };
}

/**
 * A strong ETag names one representation, and a compressed answer is another one than the identity
 * bytes: the encoding is appended to the tag (as Apache does), after compression chose it.
 */
export function etagPerEncoding(): Middleware {
  return async (ctx: Context, next) => {
    await next();
    const tag = ctx.response.get('ETag');
    const suffix = suffixOf[ctx.response.get('Content-Encoding')];
    if (tag && suffix && tag.startsWith('"')) ctx.set('ETag', `${tag.slice(0, -1)}${suffix}"`);
  };
}
