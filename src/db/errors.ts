import {
  BackendTerminatedError,
  BackendTerminatedUnexpectedlyError,
  ConnectionError,
  StatementCancelledError,
  StatementTimeoutError,
} from 'slonik';
import { PoolCallTimeoutError, PoolExhaustedError } from './gate.js';

/**
 * What a failure means to a client, as PostgREST's mapSQLtoHTTP decides it: 'unavailable' (the database
 * cannot be reached or ended the connection), 'timeout' (a statement ran past its limit), 'busy' (no
 * connection or lock became free in time, a deadlock: try again soon), 'rejected' (the database refused
 * a value of the request: a 400). Anything else is a defect (500).
 */
export type DatabaseFailure = 'unavailable' | 'timeout' | 'busy' | 'rejected';

// SQLSTATE classes that mean "the database cannot answer right now" rather than "the query is wrong":
// 08 connection exception, 53 insufficient resources, 57P admin shutdown / crash / cannot connect now.
const unavailableState = /^(08|53|57P)/;
const unavailableSocket = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/** A query failed because its connection had been lost (ended by the server, a restart, a network fault). */
export class ConnectionLostError extends Error {
  constructor(cause: unknown) {
    super('the database connection was lost', { cause });
    this.name = 'ConnectionLostError';
  }
}

/** The SQLSTATE of a database error, looked for along its cause chain (slonik wraps the driver's error). */
export function sqlState(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/**
 * Classifies an error by its class and SQLSTATE, never by message text: 'unavailable' when the
 * database cannot be reached, 'timeout' when a statement ran past its limit, null otherwise.
 */
export function classifyDatabaseError(error: unknown): DatabaseFailure | null {
  for (let current = error, depth = 0; current && depth < 5; current = (current as { cause?: unknown }).cause, depth++) {
    if (current instanceof PoolExhaustedError) return 'busy';
    if (current instanceof PoolCallTimeoutError) return 'timeout';
    if (current instanceof ConnectionLostError) return 'unavailable';
    if (current instanceof StatementTimeoutError || current instanceof StatementCancelledError) return 'timeout';
    if (
      current instanceof ConnectionError ||
      current instanceof BackendTerminatedError ||
      current instanceof BackendTerminatedUnexpectedlyError
    ) {
      return 'unavailable';
    }
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (code === '57014') return 'timeout';
      if (unavailableState.test(code) || unavailableSocket.has(code)) return 'unavailable';
      // 55P03 lock not available, 40P01 deadlock, 40001 serialization failure.
      if (code === '55P03' || code === '40P01' || code === '40001') return 'busy';
      // Class 22, data exception: a value the database cannot take (a NUL, a number out of range).
      if (code.startsWith('22')) return 'rejected';
    }
  }
  return null;
}

// A deadlock or a serialization failure: the transaction did nothing and can simply run again.
export const conflictStates = new Set(['40P01', '40001']);

/** Runs `work` again (up to five times in all) when it failed on a deadlock or a serialization failure. */
export async function retryOnConflict<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const code = sqlState(error);
      if (attempt >= 5 || !code || !conflictStates.has(code)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 * attempt * Math.random()));
    }
  }
}
