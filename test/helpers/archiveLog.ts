// What the archive held at each instant, from what a test itself posted, flagged and deleted.

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * An instant between two writes: after the last one was acknowledged and before the next starts. The
 * archive records entries to the microsecond and as_of is to the millisecond, hence the pauses.
 */
export async function between(): Promise<string> {
  await pause(3);
  const at = new Date().toISOString();
  await pause(3);
  return at;
}

/** The data rows of a CSV download: comment lines and the header row left out. */
export const csvRows = (text: string) => text.split('\n').filter((line) => /^\d{4}-/.test(line));

export type Posted = { ts: number; temperature_c: number };

/**
 * What the archive held at each instant, from what the test itself posted, flagged and deleted: an
 * append-only log, independent of the service's own version columns.
 */
export class ArchiveLog {
  private readonly entries: ({ at: string } & ({ kind: 'post'; readings: Posted[] } | { kind: 'flag'; from: number; to: number; flag: string } | { kind: 'delete'; from: number; to: number }))[] = [];

  posted(at: string, readings: Posted[]): void {
    this.entries.push({ at, kind: 'post', readings });
  }

  flagged(at: string, from: number, to: number, flag: string): void {
    this.entries.push({ at, kind: 'flag', from, to, flag });
  }

  deleted(at: string, from: number, to: number): void {
    this.entries.push({ at, kind: 'delete', from, to });
  }

  /** The readings held at `instant` (every entry logged before it), oldest first, each with its flag then. */
  heldAt(instant: string): { ts: number; temperature_c: number; flag: string }[] {
    const held = new Map<number, number>();
    const flags: { from: number; to: number; flag: string }[] = [];
    for (const entry of this.entries) {
      if (entry.at > instant) break;
      if (entry.kind === 'post') for (const r of entry.readings) if (!held.has(r.ts)) held.set(r.ts, r.temperature_c);
      if (entry.kind === 'flag') flags.push(entry);
      if (entry.kind === 'delete') for (const ts of [...held.keys()]) if (ts >= entry.from && ts <= entry.to) held.delete(ts);
    }
    const flagOf = (ts: number) => flags.findLast((f) => f.from <= ts && ts <= f.to)?.flag ?? 'ok';
    return [...held].sort(([a], [b]) => a - b).map(([ts, temperature_c]) => ({ ts, temperature_c, flag: flagOf(ts) }));
  }
}

