import assert from 'node:assert/strict';
import { copyRow, withLiterals } from '../../src/db/copyRow.js';
import { createPgPool, type PgPool } from '../../src/db/pool.js';
import { testServer } from '../helpers/server.js';

describe('one row read through COPY as bytes', () => {
  let pool: PgPool;
  before(() => {
    pool = createPgPool(testServer().adminUrl, { size: 1, waitMs: 5_000, name: 'envmon-copy-row' });
  });
  after(() => pool.end());

  it('gives each field\'s bytes as the database writes them, null for NULL, and null for no row', async () => {
    const text = 'é, and a 3.7 MB answer is the same';
    const row = await copyRow(pool, () => `select 7::int as n, '${text}'::text as t, null::text as missing, repeat('x', 200000) as long`);
    assert.equal(row!.length, 4);
    assert.equal(row![0]!.readInt32BE(0), 7);
    assert.equal(row![1]!.toString('utf8'), text);
    assert.equal(row![2], null);
    assert.equal(row![3]!.toString('latin1'), 'x'.repeat(200_000));
    assert.equal(await copyRow(pool, () => 'select 1 where false'), null);
  });

  it('makes every bind parameter a literal the database reads back as given, quotes and backslashes included', async () => {
    const values = ["it's'); drop table stations; --", 'back\\slash $2', 60.5, null];
    const row = await copyRow(pool, (client) =>
      withLiterals(client, 'select $1::text, $2::text, $3::float8 * 2, $4::text is null, $1::text = $1::text', values));
    assert.deepEqual(row!.slice(0, 2).map((field) => field!.toString('utf8')), values.slice(0, 2));
    assert.equal(row![2]!.readDoubleBE(0), 121);
    assert.deepEqual([row![3]![0], row![4]![0]], [1, 1]);
    assert.throws(() => withLiterals({ escapeLiteral: (v: string) => `'${v}'` } as never, 'select $2', ['a']), /no value for \$2/);
  });
});
