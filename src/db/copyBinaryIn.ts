import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { binaryCopyHeader, binaryCopyTrailer } from './copyBinary.js';

async function* framed(tuples: Iterable<Buffer> | AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield binaryCopyHeader;
  yield* tuples;
  yield binaryCopyTrailer;
}

/**
 * `copy <target> from stdin (format binary)` of the tuples as they come, so that the database takes one
 * piece while the next is made. Resolves once the database has taken every row.
 */
export function copyBinaryIn(client: pg.PoolClient, target: string, tuples: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<void> {
  return pipeline(Readable.from(framed(tuples)), client.query(copyFrom(`copy ${target} from stdin with (format binary)`)));
}
