/**
 * Cache-Control per kind of answer. Every buffered answer also carries a strong ETag, so a client that
 * revalidates gets a 304 whenever nothing changed; max-age says how long it may skip asking at all.
 */
export const cachePolicy = {
  /** Changes only with a release: discovery, the OpenAPI document, the changelog, the docs page. */
  release: 'public, max-age=3600',
  /** The organisation's content, changed by an operator's import: a few minutes' delay is harmless. */
  content: 'public, max-age=300',
  /** Stations carry their latest reading, which moves every minute. */
  stations: 'public, max-age=30',
  /** Readings that may change at any moment: always revalidate (cheap with the ETag). */
  live: 'no-cache',
  /**
   * Aggregates whose buckets have all closed. Short: a station's late backfill or an operator's override
   * can still change a closed bucket, and an aggregate must show it soon.
   */
  closedAggregate: 'public, max-age=300',
  /** Streamed files: no validator to revalidate with, and too large for a shared cache to hold for everyone. */
  download: 'no-store',
  /** A snapshot's record: it never changes once made. */
  snapshot: 'public, max-age=86400',
} as const;
