import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';
import { postBatch, stationWithKey } from '../../helpers/ingest.js';
import { daysAgo } from '../../helpers/rollups.js';

// Yesterday at 00:22:00 UTC, with the fraction of its second given as sent.
const second = (fraction: string, minute = 22) => `${daysAgo(1, minute).slice(0, 19)}${fraction}Z`;
const finer = (sent: string) => `timestamp '${sent}' is finer than the millisecond the archive keeps: give at most three decimals of the second, or zeros after them`;

/** The station's readings as /data/historical/ and the CSV download give them: timestamp and temperature. */
async function readBack(env: TestEnv, station: string): Promise<{ historical: [string, number][]; csv: [string, number][] }> {
  const historical = await env.getJson(`/api/v1/data/historical/?station=${station}&hours=48`);
  assert.equal(historical.status, 200);
  const download = await env.get(`/api/v1/data/download/?station=${station}`);
  assert.equal(download.status, 200);
  const rows = parse(await download.text(), { comment: '#', columns: true }) as Record<string, string>[];
  return {
    historical: historical.body.readings.map((r: { timestamp: string; temperature_c: number }) => [r.timestamp, r.temperature_c]),
    csv: rows.map((r) => [r.timestamp_utc!, Number(r.temperature_c)]),
  };
}

describeEngines('timestamps kept to the millisecond, never rounded', (env) => {
  it('makes a timestamp between two milliseconds a row error, never a duplicate of the millisecond it shares', async () => {
    const key = await stationWithKey(env(), 'ms-report');
    const first = await postBatch(env(), key, {
      station_id: 'ms-report',
      readings: [{ timestamp: second('.999'), temperature_c: 1 }, { timestamp: second('.9999999'), temperature_c: 2 }],
    });
    assert.equal(first.status, 201);
    assert.deepEqual(first.body, { accepted: 1, duplicates: 0, errors: 1, error_details: [{ index: 1, reason: finer(second('.9999999')) }] });
    // As first reported: .999999 then .9999999, both stored at .999 before, the second counted a duplicate.
    const reported = await postBatch(env(), key, {
      station_id: 'ms-report',
      readings: [{ timestamp: second('.999999'), temperature_c: 3 }, { timestamp: second('.9999999'), temperature_c: 4 }],
    });
    assert.equal(reported.status, 201);
    assert.deepEqual(reported.body, {
      accepted: 0, duplicates: 0, errors: 2,
      error_details: [{ index: 0, reason: finer(second('.999999')) }, { index: 1, reason: finer(second('.9999999')) }],
    });
    const stored = [[second('.999'), 1]];
    assert.deepEqual(await readBack(env(), 'ms-report'), { historical: stored, csv: stored });
  });

  it('takes zeros below the millisecond as the millisecond: .999000 is .999', async () => {
    const key = await stationWithKey(env(), 'ms-zeros');
    const sent = await postBatch(env(), key, {
      station_id: 'ms-zeros',
      readings: [{ timestamp: second('.999000'), temperature_c: 5 }, { timestamp: second('.123000000', 23), temperature_c: 6 }],
    });
    assert.deepEqual([sent.status, sent.body], [201, { accepted: 2, duplicates: 0, errors: 0, error_details: [] }]);
    const stored = [[second('.999'), 5], [second('.123', 23), 6]];
    assert.deepEqual(await readBack(env(), 'ms-zeros'), { historical: stored, csv: stored });
    // The same instant written with three decimals is the same reading.
    const again = await postBatch(env(), key, { station_id: 'ms-zeros', readings: [{ timestamp: second('.999'), temperature_c: 7 }] });
    assert.deepEqual([again.status, again.body], [201, { accepted: 0, duplicates: 1, errors: 0, error_details: [] }]);
  });

  // The same three rows in each body format: the finer one is an error, the rows around it are stored.
  const rows: [string, number][] = [[second('.5', 30), 8], [second('.000001', 31), 9], [second('.250000', 32), 10]];
  const bodies = {
    'application/json': (station: string) => JSON.stringify({ station_id: station, readings: rows.map(([timestamp, t]) => ({ timestamp, temperature_c: t })) }),
    'application/x-ndjson': () => rows.map(([timestamp, t]) => JSON.stringify({ timestamp, temperature_c: t })).join('\n'),
    'text/csv': () => `timestamp,temperature_c\r\n${rows.map(([timestamp, t]) => `${timestamp},${t}`).join('\r\n')}\r\n`,
  };
  for (const [type, body] of Object.entries(bodies)) {
    it(`holds a ${type} body to the same rule and keeps the rest of its batch`, async () => {
      const station = `ms-${type.split(/[/-]/).at(-1)}`;
      const key = await stationWithKey(env(), station);
      const sent = await postBatch(env(), key, body(station), { 'Content-Type': type });
      assert.equal(sent.status, 201);
      assert.deepEqual(sent.body, { accepted: 2, duplicates: 0, errors: 1, error_details: [{ index: 1, reason: finer(second('.000001', 31)) }] });
      const stored = [[second('.500', 30), 8], [second('.250', 32), 10]];
      assert.deepEqual(await readBack(env(), station), { historical: stored, csv: stored });
    });
  }

  it('refuses an instant between two milliseconds wherever one selects readings: as_of, since, a snapshot\'s URL, the CLI\'s ranges', async function () {
    this.timeout(60_000);
    const key = await stationWithKey(env(), 'ms-select');
    await postBatch(env(), key, { station_id: 'ms-select', readings: [{ timestamp: second('.000'), temperature_c: 11 }] });
    const reason = 'is finer than the millisecond the archive keeps: give at most three decimals of the second, or zeros after them';
    const instant = second('.0000001', 40);
    const problem = (param: string) => ({
      type: 'urn:envmon:problem:invalid-parameters', title: 'Invalid parameters', status: 400,
      detail: `${param} ${reason}`, errors: [{ param, message: reason }],
    });
    for (const [path, param] of [
      [`/api/v1/data/historical/?station=ms-select&hours=48&as_of=${instant}`, 'as_of'],
      [`/api/v1/data/download/?station=ms-select&as_of=${instant}`, 'as_of'],
      [`/api/v1/data/aggregate/?station=ms-select&period=hour&as_of=${instant}`, 'as_of'],
      [`/api/v1/data/changes/?station=ms-select&since=${instant}`, 'since'],
    ] as const) {
      const answer = await env().get(path);
      assert.equal(answer.status, 400, path);
      assert.match(answer.headers.get('content-type')!, /^application\/problem\+json/);
      assert.deepEqual(await answer.json(), problem(param), path);
    }
    const snapshot = await env().get('/api/v1/snapshots/', {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: `/api/v1/data/historical/?station=ms-select&hours=48&as_of=${instant}` }),
    });
    assert.deepEqual([snapshot.status, await snapshot.json()], [400, problem('url: as_of')]);
    // Zeros below the millisecond name the millisecond: the archive as it stands now holds the reading.
    const now = new Date().toISOString().replace('Z', '000Z');
    const zeros = await env().getJson(`/api/v1/data/historical/?station=ms-select&hours=48&as_of=${now}`);
    assert.deepEqual([zeros.status, zeros.body.readings.length], [200, 1]);
    const changes = await env().getJson(`/api/v1/data/changes/?station=ms-select&since=${second('.000000', 40)}`);
    assert.equal(changes.status, 200);

    const cli = { DATABASE_URL: env().databaseUrl };
    const deleted = await runCli(['readings', 'delete', '--station', 'ms-select', '--from', second('.0001'), '--to', second('.000', 23)], cli);
    assert.equal(deleted.code, 2);
    assert.match(deleted.stderr, new RegExp(`--from ${reason}, got '${second('.0001').replace(/\./g, '\\.')}'`));
    const flagged = await runCli(['flag', '--station', 'ms-select', '--from', second('.000', 21), '--to', second('.0009'), '--flag', 'invalid'], cli);
    assert.equal(flagged.code, 2);
    assert.match(flagged.stderr, /--to is finer than the millisecond the archive keeps/);
    const kept = await readBack(env(), 'ms-select');
    assert.deepEqual(kept.historical, [[second('.000'), 11]]);
    const zerosDelete = await runCli(['readings', 'delete', '--station', 'ms-select', '--from', second('.000000'), '--to', second('.000000')], cli);
    assert.equal(zerosDelete.code, 0, zerosDelete.stderr);
    assert.match(zerosDelete.stdout, new RegExp(`^1 readings of ms-select deleted between ${second('.000').replace(/\./g, '\\.')}`));
  });
});
