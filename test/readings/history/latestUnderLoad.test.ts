import assert from 'node:assert/strict';
import { coalesce } from '../../../src/db/coalesce.js';
import { describeEngines } from '../../helpers/app.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';

describe('coalesced reads', () => {
  it('serve every call with a read that started after it, sharing one read among the calls that wait', async () => {
    const started: number[] = [];
    let finish: (() => void)[] = [];
    const read = coalesce(async (key: string) => {
      const run = started.push(Date.now());
      await new Promise<void>((resolve) => finish.push(resolve));
      return `${key}#${run}`;
    });
    const first = read('a');
    const waiting = [read('a'), read('a'), read('a')];
    const other = read('b');
    assert.equal(started.length, 2, 'one read per key in flight');
    finish.splice(0).forEach((done) => done());
    assert.equal(await first, 'a#1');
    assert.equal(await other, 'b#2');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(started.length, 3, 'the calls that waited share the next read');
    finish.splice(0).forEach((done) => done());
    assert.deepEqual(await Promise.all(waiting), ['a#3', 'a#3', 'a#3']);
    finish = [];
  });
});

describeEngines('GET /data/latest/ under load', (env) => {
  it('gives every client that asks after a 201 the reading it holds, while many others ask at once', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'ld-latest');
    const base = Math.floor(Date.now() / 60_000) * 60_000 - 60 * 60_000;
    let stop = false;
    // Thirty clients ask for the latest reading without pause, as embedded charts do.
    const load = Promise.all(Array.from({ length: 30 }, async () => {
      let answers = 0;
      while (!stop) {
        const response = await env().get('/api/v1/data/latest/?station=ld-latest');
        await response.arrayBuffer();
        answers++;
      }
      return answers;
    }));
    try {
      for (let i = 0; i < 20; i++) {
        const timestamp = new Date(base + i * 60_000).toISOString();
        const posted = await postBatch(env(), key, { station_id: 'ld-latest', readings: [{ timestamp, temperature_c: i }] });
        assert.equal(posted.status, 201);
        const latest = await env().getJson('/api/v1/data/latest/?station=ld-latest');
        assert.equal(latest.status, 200);
        assert.equal(latest.body.timestamp, timestamp, `reading ${i} is the latest once its 201 arrived`);
        assert.equal(latest.body.temperature_c, i);
      }
    } finally {
      stop = true;
    }
    assert.ok((await load).every((answers) => answers > 0));
  });
});
