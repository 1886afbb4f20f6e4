import { invalidParameters, type ParamError } from '../../http/problem.js';
import type { SnapshotSource } from '../core/snapshotSource.js';

/** A readings query a snapshot keeps: its endpoint, its parameters parsed, and their canonical text. */
export type SnapshotQuery = { source: SnapshotSource; query: Record<string, unknown>; canonical: string };

// Not part of what a snapshot names: it has every format, and its own instant.
const setAside = new Set(['output', 'as_of']);

/**
 * The parameters as one text, whatever order and spelling they came in: each parameter the endpoint
 * knows with the value it takes (defaults written out, lists sorted), by name. Parsed again, the text
 * gives the same parameters, so that a snapshot is made again from exactly what it names.
 */
function canonicalText(query: Record<string, unknown>): string {
  const entries = Object.entries(query)
    .filter(([name, value]) => value !== undefined && !setAside.has(name))
    .map(([name, value]) => [name, Array.isArray(value) ? [...value].map(String).sort().join(',') : String(value)] as [string, string])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return new URLSearchParams(entries).toString();
}

/** Parses parameters with the endpoint's schema and rules; a wrong one is a 400 naming it within `url`. */
function parseWith(source: SnapshotSource, params: URLSearchParams): Record<string, unknown> {
  const input: Record<string, string | string[]> = {};
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    input[name] = values.length === 1 ? values[0]! : values;
  }
  const parsed = source.schema.safeParse(input);
  const errors: ParamError[] = parsed.success
    ? (source.checks?.(parsed.data) ?? [])
    : parsed.error.issues.map((issue) => ({ param: `url: ${issue.path.join('.') || 'query'}`, message: issue.message.charAt(0).toLowerCase() + issue.message.slice(1) }));
  if (!parsed.success || errors.length > 0) throw invalidParameters(errors.map((e) => (e.param.startsWith('url') ? e : { ...e, param: `url: ${e.param}` })));
  return parsed.data;
}

/**
 * The readings query a URL of this API names, normalised; its `as_of`, when it has one. A URL of another
 * endpoint, or not a URL, is a 400 naming `url`.
 */
export function parseSnapshotUrl(url: string, sources: readonly SnapshotSource[]): SnapshotQuery & { asOf?: string } {
  let parsed: URL;
  try {
    parsed = new URL(url, 'http://envmon.invalid');
  } catch {
    throw invalidParameters([{ param: 'url', message: 'must be a URL of this API' }]);
  }
  const path = parsed.pathname.endsWith('/') ? parsed.pathname : `${parsed.pathname}/`;
  const source = sources.find((s) => path === s.path || path.endsWith(s.path));
  if (!source) {
    throw invalidParameters([{ param: 'url', message: `must be a readings URL of this API: ${sources.map((s) => s.path).join(', ')}` }]);
  }
  const query = parseWith(source, parsed.searchParams);
  const canonical = canonicalText(query);
  const asOf = parsed.searchParams.get('as_of') ?? undefined;
  return { ...snapshotQueryOf(source, canonical), asOf };
}

/** A stored snapshot's query, parsed again from its canonical text. */
export function snapshotQueryOf(source: SnapshotSource, canonical: string): SnapshotQuery {
  return { source, query: parseWith(source, new URLSearchParams(canonical)), canonical };
}
