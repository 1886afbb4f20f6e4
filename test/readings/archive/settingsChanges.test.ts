import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { between, csvRows } from '../../helpers/archiveLog.js';
import { runCli } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';

const minute = 60_000;
const hour = 3_600_000;
const day = 86_400_000;
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const pathOf = (url: string) => new URL(url).pathname;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function snapshot(env: TestEnv, url: string): Promise<any> {
  const response = await env.get('/api/v1/snapshots/', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ url }) });
  assert.equal(response.status, 201, url);
  return response.json();
}

/** Each of the snapshot's files, fetched, has the digest recorded when it was made. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function assertFilesVerify(env: TestEnv, record: any): Promise<void> {
  for (const format of ['csv', 'parquet'] as const) {
    const response = await env.get(pathOf(record.formats[format].url));
    assert.equal(response.status, 200, format);
    assert.equal(sha256(new Uint8Array(await response.arrayBuffer())), record.formats[format].sha256, format);
  }
}

const within = (at: string, after: string, before: string) => assert.ok(after < at && at < before, `${at} not within ${after} and ${before}`);

describeEngines('the change log of a station\'s settings', (env) => {
  const base = Math.floor((Date.now() - 10 * day) / day) * day;
  const dayOf = (offset: number) => new Date(base + offset * day).toISOString().slice(0, 10);
  const readings = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ timestamp: new Date(base + i * minute).toISOString(), temperature_c: 10 + (i % 40) / 8, humidity_rh: 50 }));
  const cli = (args: string[]) => runCli(args, { DATABASE_URL: env().databaseUrl });
  const configFile = async (name: string, config: unknown) => {
    const file = path.join(tmpdir(), `envmon-qc-changes-${process.pid}-${name}.json`);
    await writeFile(file, JSON.stringify(config));
    return file;
  };

  it('lists a quality-control configuration set after a qc=true snapshot, which then differs while its files stay the same', async () => {
    const station = 'qcchg-01';
    const key = await stationWithKey(env(), station);
    assert.equal((await postBatch(env(), key, { station_id: station, readings: readings(600) })).status, 201);
    // A configuration every reading passes, set before the snapshot: no change after it.
    const before = await between();
    const lenient = await cli(['qc', 'set', station, await configFile('lenient', { streams: { temperature_c: { qartod: { gross_range_test: { fail_span: [-100, 100] } } } } })]);
    assert.equal(lenient.code, 0, lenient.stderr);
    const afterLenient = await between();
    const query = `/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(0)}&qc=true`;
    const record = await snapshot(env(), query);
    assert.equal(record.formats.csv.rows, 600);
    const unchanged = await env().getJson(`${pathOf(record.url)}changes/`);
    assert.equal(unchanged.body.differs, false);
    assert.deepEqual(unchanged.body.changes, []);

    // A configuration every reading fails: the same query answered now flags every row otherwise.
    const since = await between();
    const strict = await cli(['qc', 'set', station, await configFile('strict', { streams: { temperature_c: { qartod: { gross_range_test: { fail_span: [-100, 0] } } } } }), '--reason', 'sensor recalibrated']);
    assert.equal(strict.code, 0, strict.stderr);
    const afterStrict = await between();
    const kept = csvRows((await (await env().get(pathOf(record.formats.csv.url))).text()));
    const live = csvRows(await (await env().get(query)).text());
    assert.equal(live.length, kept.length);
    assert.ok(live.every((row, i) => row !== kept[i]), 'every row differs now');

    const changes = await env().getJson(`${pathOf(record.url)}changes/`);
    assert.equal(changes.status, 200);
    assert.equal(changes.body.differs, true);
    assert.deepEqual(changes.body.changes, [{ kind: 'qc_config', station, at: changes.body.changes[0]?.at, config: 'station', reason: 'sensor recalibrated' }]);
    within(changes.body.changes[0].at, since, afterStrict);
    // The station's log says the same after the snapshot's instant, and both settings after an earlier one.
    const log = await env().getJson(`/api/v1/data/changes/?station=${station}&since=${record.as_of}`);
    assert.deepEqual(log.body.changes, changes.body.changes);
    const all = await env().getJson(`/api/v1/data/changes/?station=${station}&since=${before}`);
    assert.deepEqual(all.body.changes.map((c: { config: string }) => c.config), ['station', 'station']);
    within(all.body.changes[0].at, before, afterLenient);
    assert.equal(all.body.changes[0].reason, undefined);
    // A setting from before `since` is not listed.
    assert.deepEqual((await env().getJson(`/api/v1/data/changes/?station=${station}&since=${afterStrict}`)).body.changes, []);
    await assertFilesVerify(env(), record);

    // The defaults again: listed as such, with its reason.
    const reset = await cli(['qc', 'reset', station, '--reason', 'back to the network\'s tests']);
    assert.equal(reset.code, 0, reset.stderr);
    const afterReset = await env().getJson(`/api/v1/data/changes/?station=${station}&since=${afterStrict}`);
    assert.deepEqual(afterReset.body.changes, [{ kind: 'qc_config', station, at: afterReset.body.changes[0]?.at, config: 'default', reason: 'back to the network\'s tests' }]);
    await assertFilesVerify(env(), record);
    // A flag qc does not take is refused, and nothing is set.
    const refused = await cli(['qc', 'reset', station, '--why', 'no reason']);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--why/);
    assert.equal((await env().getJson(`/api/v1/data/changes/?station=${station}&since=${afterStrict}`)).body.changes.length, 1);
  });

  it('lists a station\'s interval changed after an aggregate snapshot, whose coverage then differs, and never its first interval', async () => {
    const station = 'ivchg-01';
    const created = await between();
    const key = await stationWithKey(env(), station);
    assert.equal((await postBatch(env(), key, { station_id: station, readings: readings(180) })).status, 201);
    const query = `/api/v1/data/aggregate/?station=${station}&period=hour&metrics=temperature_c&from_date=${dayOf(0)}&to_date=${dayOf(0)}`;
    const record = await snapshot(env(), query);
    const download = await snapshot(env(), `/api/v1/data/download/?station=${station}&from_date=${dayOf(0)}&to_date=${dayOf(0)}`);
    assert.equal((await env().getJson(`${pathOf(record.url)}changes/`)).body.differs, false);
    // The readings posted are a backfill since before the station was made; its first interval is no change.
    const settings = async (since: string) => (await env().getJson(`/api/v1/data/changes/?station=${station}&since=${since}`)).body.changes
      .filter((c: { kind: string }) => c.kind !== 'backfill');
    assert.deepEqual(await settings(created), []);

    const since = await between();
    const add = ['stations', 'add', station, '--name', 'Interval station', '--location-name', 'Test', '--altitude', '100'];
    const slower = await cli([...add, '--interval-seconds', '120']);
    assert.equal(slower.code, 0, slower.stderr);
    const after = await between();
    // The same interval again, and an update without one, are no change.
    assert.equal((await cli([...add, '--interval-seconds', '120'])).code, 0);
    assert.equal((await cli(add)).code, 0);

    // The oracle: an hour of 60 readings against the 30 that one every 120 s implies.
    const live = await env().getJson(`${query}`);
    assert.deepEqual(live.body.results.map((r: { period_start: string; expected: number; coverage_pct: number }) => [r.period_start, r.expected, r.coverage_pct]),
      [0, 1, 2].map((h) => [new Date(base + h * hour).toISOString(), 30, 200]));
    const changes = await env().getJson(`${pathOf(record.url)}changes/`);
    assert.equal(changes.body.differs, true);
    assert.deepEqual(changes.body.changes, [{ kind: 'interval', station, at: changes.body.changes[0]?.at, interval_seconds: 120, previous_interval_seconds: 60 }]);
    within(changes.body.changes[0].at, since, after);
    assert.deepEqual(await settings(created), changes.body.changes);
    assert.deepEqual((await env().getJson(`/api/v1/data/changes/?station=${station}&since=${after}`)).body.changes, []);
    // A download's rows do not depend on the interval: no change for it, and no difference.
    const downloadChanges = await env().getJson(`${pathOf(download.url)}changes/`);
    assert.equal(downloadChanges.body.differs, false);
    assert.deepEqual(downloadChanges.body.changes, []);
    await assertFilesVerify(env(), record);
  });
});
