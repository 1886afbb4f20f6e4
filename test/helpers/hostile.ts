import assert from 'node:assert/strict';
import fc from 'fast-check';
import { firstEvent } from './sse.js';

type Operation = { method: string; path: string; params: { name: string; in: string }[] };

/** Every operation of the OpenAPI document, with its parameter names. */
export function operationsOf(document: { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> }): Operation[] {
  return Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, params: op.parameters ?? [] })),
  );
}

const nasty = fc.constantFrom(
  '', ' ', 'NaN', 'Infinity', '-Infinity', '1e309', '-1', '0', '1.5', '9'.repeat(40), 'null', 'undefined', 'true', '[]', '{}',
  '%', '%E0%A4%A', '%00', '..', '../../etc/passwd', '<script>alert(1)</script>', "' or 1=1 --", '__proto__', 'constructor',
  '😀', '\u202e', 'a'.repeat(5000), '2026-02-30', '2026-13-01', '0000-00-00', 'hour;drop table readings', 'ok,suspect',
);
const value = fc.oneof(nasty, fc.string(), fc.string({ unit: 'grapheme' }), fc.integer().map(String), fc.double().map(String), fc.stringMatching(/^[a-z0-9-]{1,12}$/));

/** Percent-encodes like a client would, but sometimes passes a raw, possibly malformed, sequence through. */
const encoded = (raw: string, keepRaw: boolean) => (keepRaw && /^[\x21-\x7e]*$/.test(raw) && !/[#?/]/.test(raw) ? raw : encodeURIComponent(raw));

/** Deep, wide and odd JSON, __proto__ keys included (as raw text, where they stay keys). */
const hostileJson = fc.oneof(
  fc.json({ depthSize: 'large' }),
  fc.integer({ min: 1, max: 3000 }).map((depth) => '['.repeat(depth) + ']'.repeat(depth)),
  fc.constantFrom('{"station_id":"fz-01","readings":[{"timestamp":"2026-01-01T00:00:00Z","__proto__":{"polluted":1}}]}',
    '{"station_id":"fz-01","readings":[{"timestamp":"2026-01-01T00:00:00Z","temperature_c":1e999}]}',
    '{"station_id":"fz-01","readings":[{"timestamp":"2026-01-01T00:00:00Z","temperature_c":"NaN"}]}',
    '{"constructor":{"prototype":{"x":1}},"station_id":"fz-01","readings":[]}', '', 'null', '"text"', '{', '{"a":}'),
  fc.record({
    station_id: fc.oneof(fc.constant('fz-01'), value),
    readings: fc.array(fc.oneof(fc.anything(), fc.record({ timestamp: fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), value), temperature_c: fc.oneof(fc.double(), fc.constant(null), value) }, { requiredKeys: [] })), { maxLength: 20 }),
  }, { requiredKeys: [] }).map((b) => JSON.stringify(b)),
);

export type HostileRequest = { method: string; url: string; headers: Record<string, string>; body?: string };

/** An arbitrary request against one of `operations`; `key` is a live station key for fz-01. */
export function hostileRequest(operations: Operation[], key: string): fc.Arbitrary<HostileRequest> {
  return fc
    .record({
      op: fc.constantFrom(...operations),
      pathValues: fc.array(value, { minLength: 3, maxLength: 3 }),
      rawPath: fc.boolean(),
      query: fc.array(fc.tuple(fc.oneof(fc.constantFrom('station', 'stations', 'param', 'period', 'hours', 'quality', 'page', 'q', 'output', 'limit', 'from_date', 'to_date', 'theme', 'type', 'year'), fc.string()), value), { maxLength: 6 }),
      rawQuery: fc.boolean(),
      auth: fc.oneof(fc.constant(`Token ${key}`), fc.constant(''), value.map((v) => `Token ${v}`), value),
      contentType: fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', '', 'application/json; charset=latin1'),
      forwarded: value,
      body: hostileJson,
    })
    .map(({ op, pathValues, rawPath, query, rawQuery, auth, contentType, forwarded, body }) => {
      let i = 0;
      const path = op.path.replace(/\{(\w+)\}/g, () => encoded(pathValues[i++ % pathValues.length]!, rawPath));
      const names = [...op.params.filter((p) => p.in === 'query').map((p) => p.name)];
      const pairs = query.map(([name, v], n) => [names.length && n % 2 === 0 ? names[n % names.length]! : name, v] as const);
      const qs = pairs.map(([k, v]) => `${encoded(k, false)}=${encoded(v, rawQuery)}`).join('&');
      const headers: Record<string, string> = { 'X-Forwarded-For': forwarded.replace(/[^\x20-\x7e]/g, '') };
      if (auth) headers.Authorization = auth.replace(/[^\x20-\x7e]/g, '');
      if (op.method === 'POST' && contentType) headers['Content-Type'] = contentType;
      return { method: op.method, url: `${path}${qs ? `?${qs}` : ''}`, headers, ...(op.method === 'POST' ? { body } : {}) };
    });
}

/** The property: never a 5xx, never a stack trace, and every 4xx is a problem document matching its status. */
export async function checkResponse(origin: string, request: HostileRequest): Promise<number> {
  const response = await fetch(`${origin}${request.url}`, { method: request.method, headers: request.headers, body: request.body, redirect: 'manual' });
  // A live stream never ends: its answer is read up to its first event.
  const text = response.headers.get('content-type')?.startsWith('text/event-stream') ? await firstEvent(response) : await response.text();
  const what = `${request.method} ${request.url.slice(0, 300)} -> ${response.status} ${text.slice(0, 300)}`;
  assert.ok(response.status < 500, what);
  assert.doesNotMatch(text, /\n\s+at .+\(.*:\d+:\d+\)|node_modules\//, `stack trace in ${what}`);
  if (response.status >= 400 && request.url.startsWith('/embed/')) {
    // The widget shows its errors to the person in the iframe: a page, its status kept.
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8', what);
    assert.match(text, new RegExp(`<h1>[^<]+ \\(${response.status}\\)</h1>`), what);
  } else if (response.status >= 400) {
    assert.equal(response.headers.get('content-type'), 'application/problem+json', what);
    const body = JSON.parse(text) as { type: string; title: string; status: number; detail: string };
    assert.equal(body.status, response.status, what);
    assert.ok(body.type.startsWith('urn:envmon:problem:') && body.title && body.detail, what);
  }
  return response.status;
}
