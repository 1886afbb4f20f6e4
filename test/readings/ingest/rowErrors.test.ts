import assert from 'node:assert/strict';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { assertAggregateApiExact } from '../../helpers/oracle.js';
import { countReadings } from '../../helpers/readings.js';
import { daysAgo } from '../../helpers/rollups.js';

// One base for the whole file: every row of these tests is placed from it.
const base = Date.parse(daysAgo(2));
const at = (minutes: number) => new Date(base + minutes * 60_000).toISOString();

/** A batch as JSON text: good rows at even minutes, and each hostile row (raw JSON) at an odd minute. */
function hostileBatch(station: string, good: number, hostile: string[]): { text: string; goodCount: number; badIndexes: number[] } {
  const rows: string[] = [];
  const badIndexes: number[] = [];
  for (let i = 0; i < good; i++) rows.push(JSON.stringify({ timestamp: at(i * 2), temperature_c: 10 + (i % 7), pm10: 20 }));
  hostile.forEach((row, k) => {
    const index = 1 + k * 3;
    rows.splice(index, 0, row);
  });
  rows.forEach((row, index) => {
    if (hostile.includes(row)) badIndexes.push(index);
  });
  return { text: `{"station_id":${JSON.stringify(station)},"readings":[${rows.join(',')}]}`, goodCount: good, badIndexes };
}

describeEngines('each row judged alone', (env) => {
  const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  const hostile: [string, RegExp][] = [
    [`{"timestamp":"${at(1)}","temperature_c":1,"firmware_version":"fw\\u0000x"}`, /firmware_version contains a NUL/],
    [`{"timestamp":"${at(3)}","module_data":{"note":"a\\u0000b"}}`, /module_data contains a NUL/],
    [`{"timestamp":"${at(5)}","bad\\u0000channel":3}`, /module_data key contains a NUL/],
    [`{"timestamp":"${at(7)}","module_data":{"s":"\\ud800"}}`, /unpaired surrogate/],
    [`{"timestamp":"${at(9)}","module_data":${deep(4100)}}`, /nested more than 16 levels/],
    [`{"timestamp":"${at(11)}","pm10":1.7e308}`, /pm10 must be between -1e9 and 1e9/],
    [`{"timestamp":"${at(13)}","pm10":1.7e308}`, /pm10 must be between -1e9 and 1e9/],
    [`{"timestamp":"${at(15)}","module_data":{"blob":"${'x'.repeat(20_000)}"}}`, /module_data is larger than 16384 bytes/],
    [`{"timestamp":"9999-12-31T23:59:58Z","temperature_c":5}`, /ahead of the server's clock/],
  ];
  // Made when the test runs, not when the file loads: ten minutes ahead of the clock at the time of sending.
  const tenMinutesAhead = () => [`{"timestamp":"${new Date(Date.now() + 10 * 60_000).toISOString()}","temperature_c":5}`, /ahead of the server's clock/] as [string, RegExp];

  it('stores the good rows of a batch and counts each bad one with its reason, on every re-send', async () => {
    const key = await stationWithKey(env(), 'rows-01');
    hostile.push(tenMinutesAhead());
    const batch = hostileBatch('rows-01', 40, hostile.map(([row]) => row));
    for (const attempt of [1, 2]) {
      const result = await postBatch(env(), key, batch.text);
      assert.equal(result.status, 201, JSON.stringify(result.body));
      assert.equal(result.body.accepted, attempt === 1 ? 40 : 0);
      assert.equal(result.body.duplicates, attempt === 1 ? 0 : 40);
      assert.equal(result.body.errors, hostile.length);
      assert.deepEqual(result.body.error_details.map((d: { index: number }) => d.index), batch.badIndexes);
      hostile.forEach(([, reason], k) => assert.match(result.body.error_details[k].reason, reason));
    }
    assert.equal(await countReadings(env().db, 'rows-01'), 40);
    // A reading a minute ahead (a station clock slightly fast) is within the tolerance.
    const soon = await postBatch(env(), key, { station_id: 'rows-01', readings: [{ timestamp: new Date(Date.now() + 60_000).toISOString(), pm10: 5 }] });
    assert.deepEqual([soon.status, soon.body.accepted], [201, 1]);
    // Large but allowed values in the same hour keep working, and every read stays well.
    const big = await postBatch(env(), key, { station_id: 'rows-01', readings: [{ timestamp: at(17), pm10: 9e8 }, { timestamp: at(19), pm10: -9e8 }] });
    assert.deepEqual([big.status, big.body.accepted], [201, 2]);
    for (const path of ['/api/v1/stations/?output=geojson', '/api/v1/data/compare/?stations=rows-01&param=pm10&hours=72', '/api/v1/data/latest/?station=rows-01', '/api/v1/health/']) {
      assert.equal((await env().get(path)).status < 500, true, path);
    }
    await assertAggregateApiExact(env().origin, env().db.pool, 'rows-01');
  });

  it('never reports a negative age, and envmon readings delete removes readings stored by mistake', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'rows-future');
    assert.equal((await postBatch(env(), key, { station_id: 'rows-future', readings: [{ timestamp: at(0), temperature_c: 3 }, { timestamp: at(60), temperature_c: 4 }] })).status, 201);
    // As an older version could store: a reading from a clock years ahead.
    await env().db.pool.query(sql.type(z.object({}))`
      insert into readings (station_id, ts, temperature_c, quality_flag) values ('rows-future', '9999-12-31T23:59:58Z', 5, 'ok')
    `);
    await env().db.pool.query(sql.type(z.object({}))`update station_latest set ts = '9999-12-31T23:59:58Z' where station_id = 'rows-future'`);
    const health = await env().getJson('/api/v1/health/');
    const entry = health.body.stations.find((s: { station_id: string }) => s.station_id === 'rows-future');
    assert.ok(entry.age_minutes >= 0, `age ${entry.age_minutes}`);
    const removed = await runCli(['readings', 'delete', '--station', 'rows-future', '--from', '9000-01-01', '--to', '9999-12-31'], { DATABASE_URL: env().databaseUrl });
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /^1 readings of rows-future deleted between 9000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z/);
    const latest = await env().getJson('/api/v1/data/latest/?station=rows-future');
    assert.equal(latest.body.timestamp, at(60));
    // A range of ordinary readings: the rollups follow.
    const again = await runCli(['readings', 'delete', '--station', 'rows-future', '--from', at(0), '--to', at(30)], { DATABASE_URL: env().databaseUrl });
    assert.match(again.stdout, /^1 readings of rows-future deleted/);
    await assertAggregateApiExact(env().origin, env().db.pool, 'rows-future');
    // The station's oldest-reading mark, which /stats/ reads, moves forward to what remains.
    const marks = await env().db.pool.one(sql.type(z.object({ first_ts: z.string(), ts: z.string() }))`
      select first_ts, ts from station_latest where station_id = 'rows-future'`);
    assert.deepEqual(marks, { first_ts: at(60), ts: at(60) });
    const bad = await runCli(['readings', 'delete', '--station', 'rows-future', '--from', '0000-01-01', '--to', '2026-01-01'], { DATABASE_URL: env().databaseUrl });
    assert.equal(bad.code, 2);
  });
});
