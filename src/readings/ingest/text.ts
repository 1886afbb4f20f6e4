import { isUtf8 } from 'node:buffer';

/**
 * A body's bytes as text, without altering any of them: valid UTF-8 decodes as usual, and each byte
 * that is not part of a well-formed UTF-8 sequence (a stray continuation, an overlong form, an encoded
 * surrogate, a sequence cut short) becomes the lone surrogate U+DC80 + byte, as Python's
 * `surrogateescape` does. The rules refuse any text holding a lone surrogate, so a field sent in
 * another encoding is that reading's error rather than stored with replacement characters.
 */
export function bodyText(bytes: Buffer): string {
  if (isUtf8(bytes)) return bytes.toString('utf8');
  let text = '';
  let start = 0;
  let i = 0;
  while (i < bytes.length) {
    const length = sequenceLength(bytes, i);
    if (length > 0) {
      i += length;
      continue;
    }
    text += bytes.toString('utf8', start, i) + String.fromCharCode(0xdc00 + bytes[i]!);
    start = ++i;
  }
  return text + bytes.toString('utf8', start, i);
}

/** The length of the well-formed UTF-8 sequence at `i` (Unicode's table 3-7), or 0. */
function sequenceLength(b: Buffer, i: number): number {
  const lead = b[i]!;
  if (lead < 0x80) return 1;
  let length: number;
  let low = 0x80;
  let high = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) length = 2;
  else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead === 0xe0) low = 0xa0;
    if (lead === 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead === 0xf0) low = 0x90;
    if (lead === 0xf4) high = 0x8f;
  } else return 0;
  if (i + length > b.length) return 0;
  if (b[i + 1]! < low || b[i + 1]! > high) return 0;
  for (let k = 2; k < length; k++) if ((b[i + k]! & 0xc0) !== 0x80) return 0;
  return length;
}
