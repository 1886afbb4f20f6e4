/**
 * Large buffers kept for the next request instead of left to the collector. A batch's body and its COPY
 * rows take a few megabytes each. Allocated afresh for every batch, every page of them is faulted in
 * from the kernel again, which on the virtual machines measured here costs about 6 ms per 1.5 MB body,
 * and the garbage collector is pressed to run sooner. A few are kept; more go to the collector.
 *
 * A buffer given back must not be read or written by its giver again: only the owner of a buffer that
 * no socket or stream still holds gives it back.
 */
const kept: Buffer[] = [];
let keptBytes = 0;
// Four clients' bodies and rows of 10,000 readings each; a buffer of more is rare enough to allocate.
const maxKeptTotal = 32 * 1024 * 1024;
const maxKeptBytes = 8 * 1024 * 1024;
const minKeptBytes = 64 * 1024;

/** A buffer of at least `bytes` (of unset contents): the smallest kept one that is large enough, else a new one. */
export function takeBuffer(bytes: number): Buffer {
  let best = -1;
  for (let i = 0; i < kept.length; i++) {
    if (kept[i]!.length >= bytes && (best < 0 || kept[i]!.length < kept[best]!.length)) best = i;
  }
  if (best < 0) return Buffer.allocUnsafeSlow(Math.max(bytes, minKeptBytes));
  const buffer = kept[best]!;
  kept[best] = kept[kept.length - 1]!;
  kept.pop();
  keptBytes -= buffer.length;
  return buffer;
}

/** Gives a buffer back for another to take, unless as many bytes are kept already. */
export function giveBuffer(buffer: Buffer): void {
  if (buffer.length < minKeptBytes || buffer.length > maxKeptBytes || keptBytes + buffer.length > maxKeptTotal) return;
  if (kept.includes(buffer)) throw new Error('a buffer was given back twice');
  kept.push(buffer);
  keptBytes += buffer.length;
}
