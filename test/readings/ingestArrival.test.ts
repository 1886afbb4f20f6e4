import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines } from '../helpers/app.js';
import { postBatch, stationWithKey } from '../helpers/ingest.js';
import { countReadings } from '../helpers/readings.js';

const minute = (i: number) => new Date(Date.parse('2026-05-01T00:00:00Z') + i * 60_000).toISOString();
const readings = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => ({ timestamp: minute(from + i), temperature_c: (i % 40) - 5, humidity_rh: 50, pm2_5: i % 30 }));

/** Bytes to write, a pause, or a look at the server while the body is still on its way. */
type Piece = string | { pauseMs: number } | (() => Promise<void>);

/**
 * Posts a body written in pieces with pauses between them, as a station on a slow link sends it: no
 * Content-Length, chunked. `abortAfter` cuts the connection after that many pieces instead of ending.
 */
function postInPieces(
  origin: string, key: string, pieces: Piece[], abortAfter?: number, type = 'application/json',
): Promise<{ status: number; body: Record<string, unknown> } | 'aborted'> {
  return new Promise((resolve, reject) => {
    const request = http.request(`${origin}/api/v1/ingest/environmental/`, {
      method: 'POST',
      headers: { 'Content-Type': type, Authorization: `Token ${key}` },
    }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) }));
    });
    request.on('error', (error) => (abortAfter === undefined ? reject(error) : resolve('aborted')));
    void (async () => {
      let written = 0;
      for (const piece of pieces) {
        if (typeof piece === 'string') {
          request.write(piece);
          if (++written === abortAfter) {
            await sleep(50);
            request.destroy();
            resolve('aborted');
            return;
          }
        } else if (typeof piece === 'function') await piece();
        else await sleep(piece.pauseMs);
      }
      request.end();
    })().catch((error: Error) => {
      request.destroy();
      reject(error);
    });
  });
}

/** A JSON text cut into `n` pieces with `pauseMs` between them. */
function inPieces(text: string, n: number, pauseMs: number): Piece[] {
  const size = Math.ceil(text.length / n);
  const pieces: Piece[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(text.slice(at, at + size), { pauseMs });
  return pieces;
}

describeEngines('ingest while the body arrives', (env) => {
  /** COPYs into readings under way in the app's database. */
  const copying = async () => Number((await env().db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from pg_stat_activity
    where datname = current_database() and query like 'copy readings %' and state = 'active'
  `)));

  it('takes a batch into the database while its body arrives, and gives the connection back when the body stalls', async () => {
    const key = await stationWithKey(env(), 'arr-pieces');
    const steady = JSON.stringify({ station_id: 'arr-pieces', readings: readings(3000) });
    const pieces = inPieces(steady, 10, 20);
    // Half-way through the body, its first readings are already on their way into the table.
    pieces.splice(10, 0, async () => {
      await sleep(200);
      assert.equal(await copying(), 1);
    });
    const first = await postInPieces(env().origin, key, pieces);
    assert.deepEqual(first, { status: 201, body: { accepted: 3000, duplicates: 0, errors: 0, error_details: [] } });
    // Stalled past the arrival budget (a second): the connection is given back while the rest comes, and
    // the whole body is stored once it is here.
    const stalled = JSON.stringify({ station_id: 'arr-pieces', readings: [...readings(10, 3000), { timestamp: 'never' }, ...readings(2000, 3010)] });
    const second = await postInPieces(env().origin, key, [stalled.slice(0, 2000), { pauseMs: 1_300 }, async () => {
      assert.equal(await copying(), 0);
    }, stalled.slice(2000)]);
    assert.deepEqual(second, {
      status: 201,
      body: { accepted: 2010, duplicates: 0, errors: 1, error_details: [{ index: 10, reason: "timestamp 'never' is not an ISO 8601 date-time" }] },
    });
    assert.equal(await countReadings(env().db, 'arr-pieces'), 5010);
  });

  it('takes a CSV batch into the database while it arrives; a quoted field found late gets the whole-body answer', async () => {
    const key = await stationWithKey(env(), 'arr-csv');
    const line = (r: ReturnType<typeof readings>[number]) => `${r.timestamp},${r.temperature_c},${r.humidity_rh},${r.pm2_5}`;
    const csv = ['timestamp,temperature_c,humidity_rh,pm2_5', ...readings(3000).map(line)].join('\r\n') + '\r\n';
    const pieces = inPieces(csv, 10, 20);
    pieces.splice(10, 0, async () => {
      await sleep(200);
      assert.equal(await copying(), 1);
    });
    const first = await postInPieces(env().origin, key, pieces, undefined, 'text/csv');
    assert.deepEqual(first, { status: 201, body: { accepted: 3000, duplicates: 0, errors: 0, error_details: [] } });
    // The rows sent before the quote are rolled back, and the whole body is stored as papaparse reads it.
    const quotedLate = ['timestamp,temperature_c,humidity_rh,pm2_5,firmware_version', ...readings(2000, 3000).map((r) => `${line(r)},`), `${minute(5000)},1,2,3,"fw, 2"`].join('\n');
    const second = await postInPieces(env().origin, key, inPieces(quotedLate, 10, 20), undefined, 'text/csv');
    assert.deepEqual(second, { status: 201, body: { accepted: 2001, duplicates: 0, errors: 0, error_details: [] } });
    assert.equal(await countReadings(env().db, 'arr-csv'), 5001);
    const firmware = await env().db.pool.oneFirst(sql.type(z.object({ firmware_version: z.string() }))`
      select firmware_version from readings where station_id = 'arr-csv' and ts = ${minute(5000)}`);
    assert.equal(firmware, 'fw, 2');
  });

  it('stores nothing of a body whose client goes away, and gives its database connection back', async () => {
    const key = await stationWithKey(env(), 'arr-gone');
    const text = JSON.stringify({ station_id: 'arr-gone', readings: readings(4000) });
    // More clients going away than the ingest pool has connections.
    const gone = await Promise.all(Array.from({ length: env().config.ingestPoolSize + 2 }, () => postInPieces(env().origin, key, inPieces(text, 4, 30), 2)));
    assert.ok(gone.every((outcome) => outcome === 'aborted'));
    await sleep(200);
    assert.equal(await countReadings(env().db, 'arr-gone'), 0);
    const started = Date.now();
    const whole = await postBatch(env(), key, { station_id: 'arr-gone', readings: readings(100) });
    assert.equal(whole.status, 201);
    assert.equal(whole.body.accepted, 100);
    // A leaked connection would have made it wait for the pool (5 s) and answer 503.
    assert.ok(Date.now() - started < 3_000, `answered after ${Date.now() - started} ms`);
  });

  it('refuses a chunked body past the byte limit with 413 while it arrives, storing nothing', async () => {
    const key = await stationWithKey(env(), 'arr-big');
    const padding = 'x'.repeat(64 * 1024);
    const pieces: Piece[] = ['{"station_id": "arr-big", "readings": [', ...Array.from({ length: 100 }, (_, i) => `{"timestamp": "${minute(i)}", "note": "${padding}"},`)];
    const refused = await postInPieces(env().origin, key, pieces);
    assert.notEqual(refused, 'aborted');
    if (refused === 'aborted') return;
    assert.equal(refused.status, 413);
    assert.equal(refused.body.type, 'urn:envmon:problem:payload-too-large');
    assert.equal(await countReadings(env().db, 'arr-big'), 0);
  });

  it('gives the whole-body answer to a batch found unusual only at its end', async () => {
    const key = await stationWithKey(env(), 'arr-late');
    await stationWithKey(env(), 'arr-other');
    const batch = readings(1500);
    // Readings first: the station that disagrees with the key comes last.
    const other = await postBatch(env(), key, `{"readings": ${JSON.stringify(batch)}, "station_id": "arr-other"}`);
    assert.equal(other.status, 400);
    assert.equal(other.body.detail, "station_id 'arr-other' does not match the key, which belongs to station 'arr-late'");
    const unknown = await postBatch(env(), key, `{"readings": ${JSON.stringify(batch)}, "station_id": "arr-nowhere"}`);
    assert.equal(unknown.status, 403);
    const broken = await postBatch(env(), key, `{"station_id": "arr-late", "readings": ${JSON.stringify(batch)}, }`);
    assert.equal(broken.status, 400);
    assert.equal(broken.body.detail, 'the request body is not valid JSON');
    assert.equal(await countReadings(env().db, 'arr-late'), 0);
    // An envelope key the scanner does not know, after the readings: the whole-body parser takes it.
    const noted = await postBatch(env(), key, `{"station_id": "arr-late", "readings": ${JSON.stringify(batch)}, "note": {"site": "roof"}}`);
    assert.deepEqual(noted.body, { accepted: 1500, duplicates: 0, errors: 0, error_details: [] });
    // Out of order, and repeated: sorted, the first of a timestamp kept, the repeats counted.
    const shuffled = [...readings(200, 2000).reverse(), ...readings(50, 2000)];
    const unordered = await postBatch(env(), key, { station_id: 'arr-late', readings: shuffled });
    assert.deepEqual(unordered.body, { accepted: 200, duplicates: 50, errors: 0, error_details: [] });
    assert.equal(await countReadings(env().db, 'arr-late'), 1700);
  });
});
