import assert from 'node:assert/strict';
import pg from 'pg';
import { withLiterals } from '../../src/db/copyOut.js';
import { copyRowOf } from '../../src/db/copyRow.js';
import { ConnectionLostError } from '../../src/db/errors.js';
import { createPgPool, type PgPool } from '../../src/db/pool.js';
import { testServer } from '../helpers/server.js';

const text = (field: Buffer | null | undefined) => field!.toString('utf8');

describe('rows read through COPY as bytes', () => {
  let pool: PgPool;
  before(() => {
    pool = createPgPool(testServer().adminUrl, { size: 1, waitMs: 5_000, name: 'envmon-copy-row' });
  });
  after(() => pool.end());
  const copyRow = (text: string, values: (string | number | null)[] = []) => copyRowOf(pool, { text, values });

  it('gives each field\'s bytes as the database writes them, null for NULL, and null for no row', async () => {
    const words = 'é, and a 3.7 MB answer is the same';
    const row = await copyRow(`select 7::int as n, '${words}'::text as t, null::text as missing, repeat('x', 200000) as long`);
    assert.equal(row!.length, 4);
    assert.equal(row![0]!.readInt32BE(0), 7);
    assert.equal(text(row![1]), words);
    assert.equal(row![2], null);
    assert.equal(row![3]!.toString('latin1'), 'x'.repeat(200_000));
    assert.equal(await copyRow('select 1 where false'), null);
  });

  it('makes every bind parameter a literal the database reads back as given, quotes and backslashes included', async () => {
    const values = ["it's'); drop table stations; --", 'back\\slash $2', 60.5, null];
    const row = await copyRow('select $1::text, $2::text, $3::float8 * 2, $4::text is null, $1::text = $1::text', values);
    assert.deepEqual(row!.slice(0, 2).map(text), values.slice(0, 2));
    assert.equal(row![2]!.readDoubleBE(0), 121);
    assert.deepEqual([row![3]![0], row![4]![0]], [1, 1]);
    assert.throws(() => withLiterals({ escapeLiteral: (v: string) => `'${v}'` } as never, { text: 'select $2', values: ['a'] }), /no value for \$2/);
  });
});

describe('a row read through COPY when its connection is lost', () => {
  const table = 'envmon_copy_rows_probe';
  let admin: pg.Client;
  before(async () => {
    admin = new pg.Client({ connectionString: testServer().adminUrl });
    await admin.connect();
    await admin.query(`drop table if exists ${table}; create table ${table} (n int)`);
  });
  after(async () => {
    await admin.query(`drop table if exists ${table}`);
    await admin.end();
  });

  // The statement says which backend read it and what it saw, after sleeping.
  const seen = (sleep: number) => `select pg_backend_pid()::text, pg_current_snapshot()::text, (select count(*) from ${table})::text from pg_sleep(${sleep})`;
  it('fails as a lost connection when its backend is terminated, and gives its connection back', async () => {
    const pool = createPgPool(testServer().adminUrl, { size: 4, waitMs: 5_000, name: 'envmon-copy-rows-lost' });
    try {
      const reading = copyRowOf(pool, { text: seen(5), values: [] });
      reading.catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 500));
      const { rows } = await admin.query(`select count(pg_terminate_backend(pid))::int as n from pg_stat_activity
        where application_name = 'envmon-copy-rows-lost' and query like '%pg_sleep(5)%'`);
      assert.equal(rows[0].n, 1);
      await assert.rejects(reading, ConnectionLostError);
      assert.equal(pool.busy(), 0);
      const row = await copyRowOf(pool, { text: seen(0), values: [] });
      assert.equal(row!.length, 3, 'the pool reads again');
    } finally {
      await pool.end();
    }
  });
});
