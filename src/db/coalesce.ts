/**
 * Reads of the same key share one query: a call made while the key's query is in flight waits for the
 * next one, which starts when that one ends and serves every call that arrived meanwhile. Every answer
 * therefore comes from a query that started after its call did, so a read still sees each write
 * committed before it was asked (a station reading its own batch back), while a hundred clients asking
 * for the same station at once cost the database one or two queries rather than a hundred.
 */
export function coalesce<K, V>(read: (key: K) => Promise<V>): (key: K) => Promise<V> {
  const current = new Map<K, Promise<V>>();
  const next = new Map<K, Promise<V>>();
  const start = (key: K): Promise<V> => {
    const run = read(key).finally(() => current.delete(key));
    current.set(key, run);
    return run;
  };
  return (key) => {
    const running = current.get(key);
    if (!running) return start(key);
    let waiting = next.get(key);
    if (!waiting) {
      waiting = running
        .catch(() => undefined)
        .then(() => {
          next.delete(key);
          return start(key);
        });
      next.set(key, waiting);
    }
    return waiting;
  };
}
