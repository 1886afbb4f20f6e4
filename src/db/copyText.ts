/**
 * One value in COPY's text format: \N for null, and backslash, tab, newline and carriage return
 * escaped, so that any string (a firmware version, a JSON document) arrives byte for byte.
 */
export function copyText(value: string | number | null): string {
  if (value === null) return '\\N';
  if (typeof value === 'number') return String(value);
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => copyEscapes[c]!) : value;
}

const copyEscapes: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
