/**
 * Strict JSON (RFC 8259) read in place from a request's bytes: each method takes the position where a
 * token starts and gives the position after it, or -1 when the bytes are not what it expects. Nothing
 * is decoded and no object is made, so a batch of readings costs no garbage to find its way through.
 *
 * The scanner only ever says yes to bodies the general parser takes the same way; anything unusual
 * (an escaped or `__proto__` key, nesting beyond `maxDepth`) gets -1, and the caller hands the body to
 * the general parser, which gives the answer or the error.
 */
export class JsonBytes {
  /** After `string`: whether it held an escape, and whether a byte outside ASCII. */
  escaped = false;
  nonAscii = false;
  /** After `next`: whether it met the closing byte. */
  closed = false;

  constructor(readonly bytes: Buffer) {}

  /** Past JSON whitespace. */
  space(i: number): number {
    const b = this.bytes;
    for (let c = b[i]; c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09; c = b[++i]);
    return i;
  }

  /** A string starting at its opening quote. */
  string(i: number): number {
    const b = this.bytes;
    if (b[i] !== quote) return -1;
    this.escaped = false;
    this.nonAscii = false;
    for (i++; i < b.length; i++) {
      const c = b[i]!;
      if (c === quote) return i + 1;
      if (c < 0x20) return -1;
      if (c >= 0x80) this.nonAscii = true;
      else if (c === backslash) {
        this.escaped = true;
        const e = b[++i];
        if (e === u) {
          for (let k = 0; k < 4; k++) if (!isHex(b[++i])) return -1;
        } else if (e === undefined || !simpleEscapes.has(e)) return -1;
      }
    }
    return -1;
  }

  /** A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
  number(i: number): number {
    const b = this.bytes;
    if (b[i] === minus) i++;
    if (b[i] === zero) i++;
    else if (isDigit(b[i])) while (isDigit(b[++i]));
    else return -1;
    if (b[i] === dot) {
      if (!isDigit(b[++i])) return -1;
      while (isDigit(b[++i]));
    }
    if (b[i] === 0x65 || b[i] === 0x45) {
      i++;
      if (b[i] === plus || b[i] === minus) i++;
      if (!isDigit(b[i])) return -1;
      while (isDigit(b[++i]));
    }
    return i;
  }

  /** `true`, `false` or `null`. */
  literal(i: number): number {
    for (const word of literals) if (this.equals(i, i + word.length, word)) return i + word.length;
    return -1;
  }

  /** Any value, checked whole. */
  value(i: number, depth = 0): number {
    const c = this.bytes[i];
    if (c === quote) return this.string(i);
    if (c === openBrace) return this.object(i, depth + 1);
    if (c === openBracket) return this.array(i, depth + 1);
    if (c === minus || isDigit(c)) return this.number(i);
    return this.literal(i);
  }

  /** A key of plain ASCII, never `__proto__` or `constructor`: the general parser takes the others apart. */
  key(i: number): number {
    const end = this.string(i);
    if (end < 0 || this.escaped || this.nonAscii || this.equals(i + 1, end - 1, protoKey) || this.equals(i + 1, end - 1, constructorKey)) return -1;
    return end;
  }

  /** Whether bytes [start, end) are `text` (ASCII). */
  equals(start: number, end: number, text: Uint8Array): boolean {
    if (end - start !== text.length) return false;
    const b = this.bytes;
    for (let k = 0; k < text.length; k++) if (b[start + k] !== text[k]) return false;
    return true;
  }

  /** After a member or element: past the comma and the space after it, `closed` past the closing byte, or -1. */
  next(i: number, close: number): number {
    i = this.space(i);
    const c = this.bytes[i];
    this.closed = c === close;
    if (this.closed) return i + 1;
    return c === comma ? this.space(i + 1) : -1;
  }

  private object(i: number, depth: number): number {
    if (depth > maxDepth) return -1;
    i = this.space(i + 1);
    if (this.bytes[i] === closeBrace) return i + 1;
    for (;;) {
      i = this.key(i);
      if (i < 0) return -1;
      i = this.space(i);
      if (this.bytes[i] !== colon) return -1;
      i = this.value(this.space(i + 1), depth);
      if (i < 0) return -1;
      i = this.next(i, closeBrace);
      if (i < 0 || this.closed) return i;
    }
  }

  private array(i: number, depth: number): number {
    if (depth > maxDepth) return -1;
    i = this.space(i + 1);
    if (this.bytes[i] === closeBracket) return i + 1;
    for (;;) {
      i = this.value(i, depth);
      if (i < 0) return -1;
      i = this.next(i, closeBracket);
      if (i < 0 || this.closed) return i;
    }
  }
}

/** Nesting beyond this goes to the general parser. */
const maxDepth = 64;

export const quote = 0x22;
export const colon = 0x3a;
export const comma = 0x2c;
export const openBrace = 0x7b;
export const closeBrace = 0x7d;
export const openBracket = 0x5b;
export const closeBracket = 0x5d;
export const minus = 0x2d;
const plus = 0x2b;
const dot = 0x2e;
const zero = 0x30;
const backslash = 0x5c;
const u = 0x75;

export const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 0x30 && c <= 0x39;
const isHex = (c: number | undefined) => c !== undefined && (isDigit(c) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46));
const simpleEscapes = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));
const literals = ['true', 'false', 'null'].map((word) => Buffer.from(word));
const protoKey = Buffer.from('__proto__');
const constructorKey = Buffer.from('constructor');

/** ASCII text as bytes, for `equals`. */
export const ascii = (text: string): Uint8Array => Buffer.from(text, 'latin1');
