import type { Context } from 'koa';
import { notFound } from './problem.js';

export type Paginated<T> = { count: number; page: number; total_pages: number; next: string | null; previous: string | null; results: T[] };

/**
 * The list envelope for page `page` of `count` items: absolute next/previous URLs that keep the request's
 * other parameters, also sent as an RFC 8288 Link header. A page past the last is 404; page 1 of an
 * empty list is an empty page.
 */
export function paginate<T>(ctx: Context, publicUrl: string, count: number, page: number, pageSize: number, results: T[]): Paginated<T> {
  const totalPages = Math.max(1, Math.ceil(count / pageSize));
  // Named as sent: a page beyond what a number holds exactly is taken as the largest one, not as the digits given.
  const asked = typeof ctx.query.page === 'string' ? ctx.query.page.replace(/^0+(?=\d)/, '') : String(page);
  if (page > totalPages) throw notFound(`page ${asked} is past the last page, ${totalPages}`);
  const urlFor = (target: number) => {
    const params = new URLSearchParams(ctx.querystring);
    params.set('page', String(target));
    return `${publicUrl}${ctx.path}?${params}`;
  };
  const next = page < totalPages ? urlFor(page + 1) : null;
  const previous = page > 1 ? urlFor(page - 1) : null;
  const link = [next && `<${next}>; rel="next"`, previous && `<${previous}>; rel="prev"`].filter(Boolean).join(', ');
  if (link) ctx.set('Link', link);
  return { count, page, total_pages: totalPages, next, previous, results };
}
