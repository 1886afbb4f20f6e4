import { createHash } from 'node:crypto';
import { tooManyRequests } from '../../http/problem.js';

// At most this many batches of one station's key, and of one client address, are read and stored at a
// time: one key holder or one address cannot take the ingest pool's connections from every other station.
export const batchesPerStation = 8;
export const batchesPerAddress = 16;
// Failed authentications an address may make in a minute before its ingest requests get 429: guessing
// keys cannot load the database that every station shares.
export const failedKeysPerMinute = 30;
const minute = 60_000;
// How long a key that authenticated passes an address's failed-key throttle, and how many such keys are kept.
const trustedForMs = 10 * minute;
const trustedKeys = 10_000;

/**
 * What ingest keeps of its clients, for one app: the batches each station and each address has under way,
 * and each address's recent failed authentications.
 */
export function createIngestFairness() {
  const underWay = new Map<string, number>();
  const failures = new Map<string, { count: number; resetAt: number }>();
  // Digests of Authorization headers that authenticated lately, oldest first: a station behind the same
  // address (a NAT) as someone guessing keys is not refused for their failures.
  const trusted = new Map<string, number>();
  const digest = (authorization: string) => createHash('sha256').update(authorization).digest('base64url');

  const take = (key: string, limit: number, detail: string) => {
    const held = underWay.get(key) ?? 0;
    if (held >= limit) throw tooManyRequests(detail, 1);
    underWay.set(key, held + 1);
  };
  const give = (key: string) => {
    const left = (underWay.get(key) ?? 1) - 1;
    if (left > 0) underWay.set(key, left);
    else underWay.delete(key);
  };

  return {
    /**
     * Throws a 429 when the address has failed to authenticate too often this minute, unless
     * `authorization` authenticated lately.
     */
    checkAddress(address: string, authorization: string): void {
      const seen = failures.get(address);
      if (seen && seen.resetAt <= Date.now()) failures.delete(address);
      else if (seen && seen.count >= failedKeysPerMinute && !((trusted.get(digest(authorization)) ?? 0) > Date.now())) {
        throw tooManyRequests(`more than ${failedKeysPerMinute} requests with a missing or invalid key from this address in a minute`, Math.max(1, Math.ceil((seen.resetAt - Date.now()) / 1000)));
      }
    },
    /** Remembers an Authorization header that authenticated. */
    authenticated(authorization: string): void {
      const key = digest(authorization);
      trusted.delete(key);
      trusted.set(key, Date.now() + trustedForMs);
      if (trusted.size > trustedKeys) trusted.delete(trusted.keys().next().value!);
    },
    /** Counts a failed authentication of the address; the header is trusted no more. */
    failed(address: string, authorization: string): void {
      trusted.delete(digest(authorization));
      const seen = failures.get(address);
      if (seen && seen.resetAt > Date.now()) seen.count++;
      else failures.set(address, { count: 1, resetAt: Date.now() + minute });
      // Entries of addresses that went quiet are dropped as the map grows.
      if (failures.size > 10_000) for (const [key, value] of failures) if (value.resetAt <= Date.now()) failures.delete(key);
    },
    /** Takes a place for a batch of the station from the address; throws a 429 when either has too many under way. Returns its release. */
    claim(stationId: string, address: string): () => void {
      take(`address ${address}`, batchesPerAddress, `at most ${batchesPerAddress} batches at a time from one address; wait for one to be answered`);
      try {
        take(`station ${stationId}`, batchesPerStation, `at most ${batchesPerStation} batches of one station at a time; wait for one to be answered`);
      } catch (error) {
        give(`address ${address}`);
        throw error;
      }
      let released = false;
      return () => {
        if (released) return;
        released = true;
        give(`station ${stationId}`);
        give(`address ${address}`);
      };
    },
  };
}
