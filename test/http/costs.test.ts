import assert from 'node:assert/strict';
import pg from 'pg';
import { startTestApp, type TestEnv } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { eventually } from '../helpers/rollups.js';
import { testServer } from '../helpers/server.js';

const engine = () => testServer().engines[0]!;
const from = (address: string) => ({ 'X-Forwarded-For': address });

// Computed reads hold a slot of their class from before their work to the end of their answer. A read as
// of an instant in the last minute first takes its station's lock alone; the test holds that lock shared,
// as a batch in flight does, so that such a read waits with its slot taken for as long as the test says.
describe('computed reads: a slot per client and a bound in all', () => {
  let env: TestEnv;
  let holder: pg.Client;
  before(async () => {
    env = await startTestApp(engine(), {
      TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: '0', COMPUTED_PER_CLIENT: '1', COMPUTED_READS: '2', COMPUTED_WAIT_MS: '300',
      DOWNLOADS_PER_CLIENT: '1', SNAPSHOTS_AT_ONCE: '1',
    });
    for (const station of ['cost-a', 'cost-b']) {
      const key = await stationWithKey(env, station);
      const readings = Array.from({ length: 30 }, (_, i) => ({ timestamp: new Date(Date.now() - (30 - i) * 60_000).toISOString(), temperature_c: 20 + i / 10 }));
      assert.equal((await postBatch(env, key, { station_id: station, readings })).status, 201);
    }
    holder = new pg.Client({ connectionString: env.databaseUrl });
    await holder.connect();
  });
  after(async () => {
    await holder.end();
    await env.close();
  });

  /** The backends waiting for an advisory lock: reads held behind the test's lock. */
  const waitingReads = async () => Number((await holder.query(`select count(*) from pg_locks where locktype = 'advisory' and not granted`)).rows[0].count);
  /** A read as of a moment ago of `station`: computed, and held while the test holds the station's lock. */
  const heldRead = (station: string, address: string) =>
    env.get(`/api/v1/data/historical/?station=${station}&hours=1&as_of=${new Date(Date.now() - 1000).toISOString()}`, { headers: from(address) });

  it('refuses a client over its share with a 429 at once, while another client is answered; a full service is a 503 with Retry-After', async function () {
    this.timeout(60_000);
    await holder.query(`select pg_advisory_lock_shared(7301946, hashtext('cost-a'))`);
    let released = false;
    try {
      const first = heldRead('cost-a', '127.0.0.2');
      await eventually(async () => assert.equal(await waitingReads(), 1), 20_000);

      // The same client's next computed read: over its share.
      const over = await env.get('/api/v1/stations/cost-b/quality/', { headers: from('127.0.0.2') });
      assert.equal(over.status, 429);
      assert.equal(over.headers.get('retry-after'), '1');
      const body = await over.json() as { type: string; detail: string };
      assert.equal(body.type, 'urn:envmon:problem:too-many-requests');
      assert.match(body.detail, /^at most 1 computed reads .* at a time per client/);

      // Another client: its cheap reads and a computed one are answered.
      assert.equal((await env.get('/api/v1/data/latest/?station=cost-b', { headers: from('127.0.0.3') })).status, 200);
      assert.equal((await env.get('/api/v1/data/aggregate/?station=cost-b&period=hour', { headers: from('127.0.0.3') })).status, 200);
      assert.equal((await env.get('/api/v1/stations/cost-b/quality/', { headers: from('127.0.0.3') })).status, 200);

      // A second client holds the other slot: a third client's computed read waits, then is a 503.
      const second = heldRead('cost-a', '127.0.0.4');
      await eventually(async () => assert.equal(await waitingReads(), 2), 20_000);
      const full = await env.get('/api/v1/data/aggregate/?station=cost-b&period=day&percentiles=50', { headers: from('127.0.0.5') });
      assert.equal(full.status, 503);
      assert.equal(full.headers.get('retry-after'), '1');
      assert.match((await full.json() as { detail: string }).detail, /^every one of the 2 slots for computed reads is taken/);
      // Cheap reads go on.
      assert.equal((await env.get('/api/v1/data/aggregate/?station=cost-b&period=day', { headers: from('127.0.0.5') })).status, 200);

      await holder.query('select pg_advisory_unlock_all()');
      released = true;
      assert.equal((await first).status, 200);
      assert.equal((await second).status, 200);
      // The slots are free again once the answers close.
      await eventually(async () => {
        assert.equal((await env.get('/api/v1/data/aggregate/?station=cost-b&period=day&percentiles=50', { headers: from('127.0.0.5') })).status, 200);
      }, 20_000);
    } finally {
      if (!released) await holder.query('select pg_advisory_unlock_all()');
    }
  });

  it('bounds snapshots made at once per client and in all, and finds one already made without a slot', async function () {
    this.timeout(60_000);
    const make = (url: string, address: string) => env.get('/api/v1/snapshots/', {
      method: 'POST', headers: { ...from(address), 'Content-Type': 'application/json' }, body: JSON.stringify({ url }),
    });
    // Made before the lock: asked again with its as_of, it is found, which takes no slot.
    const made = await make('/api/v1/data/aggregate/?station=cost-b&period=hour', '127.0.0.7');
    assert.equal(made.status, 201);
    const { as_of: asOf } = await made.json() as { as_of: string };
    await holder.query(`select pg_advisory_lock_shared(7301946, hashtext('cost-a'))`);
    let released = false;
    try {
      // A snapshot as of now takes its stations' locks alone first: it waits, its slot taken.
      const first = make('/api/v1/data/aggregate/?station=cost-a&period=day', '127.0.0.7');
      await eventually(async () => assert.equal(await waitingReads(), 1), 20_000);
      const over = await make('/api/v1/data/aggregate/?station=cost-b&period=day', '127.0.0.7');
      assert.equal(over.status, 429);
      assert.match((await over.json() as { detail: string }).detail, /^at most 1 snapshots made or compared at a time per client/);
      const full = await make('/api/v1/data/aggregate/?station=cost-b&period=day', '127.0.0.8');
      assert.equal(full.status, 503);
      assert.match((await full.json() as { detail: string }).detail, /^every one of the 1 slots for snapshots made or compared is taken/);
      const found = await make(`/api/v1/data/aggregate/?station=cost-b&period=hour&as_of=${asOf}`, '127.0.0.8');
      assert.equal(found.status, 201, 'a snapshot already made is found without a slot');
      await holder.query('select pg_advisory_unlock_all()');
      released = true;
      assert.equal((await first).status, 201);
    } finally {
      if (!released) await holder.query('select pg_advisory_unlock_all()');
    }
  });

  it('takes a path in another case for no route, so that no class can be passed by its spelling', async () => {
    assert.equal((await env.get('/API/V1/STATIONS/cost-b/quality/', { headers: from('127.0.0.6') })).status, 404);
  });
});
