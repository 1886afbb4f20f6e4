/**
 * Files made again from the archive, kept in memory while they fit in `maxBytes`, least recently used
 * first out: a Parquet reader asks for a file in several ranges (footer, then column chunks), each of
 * which would otherwise make it again. Requests for a file being made wait for it rather than make it
 * too. One per app: nothing is shared between instances but the archive.
 */
export function createFileCache(maxBytes: number) {
  const kept = new Map<string, Buffer>();
  const making = new Map<string, Promise<Buffer>>();
  let total = 0;

  const keep = (key: string, bytes: Buffer) => {
    if (bytes.length > maxBytes) return;
    kept.set(key, bytes);
    total += bytes.length;
    for (const [oldest, value] of kept) {
      if (total <= maxBytes) break;
      kept.delete(oldest);
      total -= value.length;
    }
  };

  return async (key: string, make: () => Promise<Buffer>): Promise<Buffer> => {
    const hit = kept.get(key);
    if (hit) {
      kept.delete(key);
      kept.set(key, hit);
      return hit;
    }
    const pending = making.get(key);
    if (pending) return pending;
    const made = make().finally(() => making.delete(key));
    making.set(key, made);
    const bytes = await made;
    keep(key, bytes);
    return bytes;
  };
}
