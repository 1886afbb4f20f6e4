import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

// COPY's binary file format: an 11-byte signature, a flags word and a header-extension length (both
// zero), the tuples, and a field count of -1 for the end.
const header = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const trailer = Buffer.from([0xff, 0xff]);

async function* framed(tuples: Iterable<Buffer> | AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield header;
  yield* tuples;
  yield trailer;
}

/**
 * `copy <target> from stdin (format binary)` of the tuples as they come, so that the database takes one
 * piece while the next is made. Resolves once the database has taken every row.
 */
export function copyBinaryIn(client: pg.PoolClient, target: string, tuples: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<void> {
  return pipeline(Readable.from(framed(tuples)), client.query(copyFrom(`copy ${target} from stdin with (format binary)`)));
}
