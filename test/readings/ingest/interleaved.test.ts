import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { sql } from 'slonik';
import { z } from 'zod';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { stationWithKey } from '../../helpers/ingest.js';

// Stations posting alternately and at once, in JSON, NDJSON and CSV, through the real HTTP route: every
// value must be stored in the field it was sent in, for the station that sent it. The oracle is the
// readings the test itself made, before any body was written.

const seed = Number(process.env.FUZZ_SEED ?? 20_261_128);
const rounds = Number(process.env.FUZZ_RUNS ?? 12);

const measurements = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'altitude_m', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'] as const;
type Measurement = (typeof measurements)[number];
const aliases: Partial<Record<Measurement, string>> = { temperature_c: 'air_temp', humidity_rh: 'air_hum', pressure_hpa: 'pressure' };
// The contract's plausibility bounds: a reading outside any of them is stored as suspect.
const bounds: Partial<Record<Measurement, [number, number]>> = {
  temperature_c: [-50, 60], humidity_rh: [0, 100], pressure_hpa: [300, 1100], pm2_5: [0, 1000],
};

/** A reading as the test means it: the stored row is derived from this alone. */
type Reading = {
  ts: string;
  values: Partial<Record<Measurement, number | null>>;
  aliased: Measurement[];
  firmware: string | null | undefined;
  moduleData: Record<string, unknown> | undefined;
  channels: Record<string, number | string>;
  /** Why the service must refuse it as a row error, or null for a good reading. */
  bad: null | 'utf8' | 'nul' | 'range' | 'timestamp';
};

const badBytes = '@@NOT-UTF-8@@';
// Text as stations send it: any Unicode (no NUL), never empty and never a number, so that every format reads it as text.
const text = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((t) => !t.includes('\u0000')).map((t) => `t${t}`);
const number = fc.oneof(
  fc.double({ min: -1e6, max: 1e6, noNaN: true }),
  fc.integer({ min: -2000, max: 2000 }),
  fc.constantFrom(0, 0.1, 21.5, 1e-7, 5e-324, 999_999_999, -999_999_999, 1100, 300, 60, -50, 60.000001),
);
const scalar = fc.oneof(number, text, fc.boolean(), fc.constant(null));
const moduleValue = fc.oneof(scalar, fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.constantFrom('a', 'b', 'é', 'x y'), scalar, { maxKeys: 3 }));

function readingArb(ts: string): fc.Arbitrary<Reading> {
  return fc
    .record({
      present: fc.subarray([...measurements]),
      values: fc.tuple(...measurements.map(() => fc.option(number, { nil: null, freq: 6 }))),
      useAlias: fc.tuple(fc.boolean(), fc.boolean(), fc.boolean()),
      firmware: fc.option(fc.option(text, { nil: null }), { nil: undefined }),
      moduleData: fc.option(fc.dictionary(fc.constantFrom('m_rssi', 'm_fw', 'm_é', 'm_list', 'm deep'), moduleValue, { minKeys: 1, maxKeys: 4 }), { nil: undefined }),
      channels: fc.dictionary(fc.constantFrom('soil_temp', 'soil_moist', 'ch_wind', 'ch_dir', 'ch_9'), fc.oneof(number, text), { maxKeys: 3 }),
      bad: fc.oneof({ weight: 12, arbitrary: fc.constant(null) }, fc.constantFrom('utf8', 'nul', 'range', 'timestamp') as fc.Arbitrary<Reading['bad']>),
    })
    .map(({ present, values, useAlias, firmware, moduleData, channels, bad }) => {
      const reading: Reading = { ts, values: {}, aliased: [], firmware, moduleData, channels, bad };
      for (const field of present) reading.values[field] = values[measurements.indexOf(field)]!;
      (['temperature_c', 'humidity_rh', 'pressure_hpa'] as const).forEach((field, i) => {
        if (useAlias[i] && field in reading.values) reading.aliased.push(field);
      });
      if (bad === 'utf8') reading.firmware = `fw${badBytes}`;
      if (bad === 'nul') reading.firmware = 'a\u0000b';
      if (bad === 'range') reading.values.pm10 = 2e9;
      return reading;
    });
}

/** The reading's members as a station writes them, in the given order. */
function members(r: Reading): [string, unknown][] {
  const out: [string, unknown][] = [['timestamp', r.bad === 'timestamp' ? r.ts.replace(/-\d\dT/, '-30T').replace(/-\d\d-/, '-02-') : r.ts]];
  for (const [field, value] of Object.entries(r.values) as [Measurement, number | null][]) {
    out.push([r.aliased.includes(field) ? aliases[field]! : field, value]);
  }
  if (r.firmware !== undefined) out.push(['firmware_version', r.firmware]);
  if (r.moduleData !== undefined) out.push(['module_data', r.moduleData]);
  for (const [name, value] of Object.entries(r.channels)) out.push([name, value]);
  return out;
}

type Format = 'json' | 'ndjson' | 'csv';
const mediaTypes: Record<Format, string> = { json: 'application/json', ndjson: 'application/x-ndjson', csv: 'text/csv' };

/** JSON text of a value, with some ASCII letters written as \u escapes when `escape`. */
function jsonText(value: unknown, escape: boolean): string {
  const json = JSON.stringify(value);
  // Escapes already written are kept as they are; a few plain letters are written as escapes too.
  const escaped = (literal: string) => literal.replace(/\\u[0-9a-fA-F]{4}|\\.|[aeio]/g, (m) => (m.length > 1 ? m : `\\u00${m.charCodeAt(0).toString(16)}`));
  return escape ? json.replace(/"(?:[^"\\]|\\.)*"/g, escaped) : json;
}

function objectText(r: Reading, order: number, escape: boolean): string {
  const list = members(r);
  // A rotation of the members: keys come in any order.
  const rotated = [...list.slice(order % list.length), ...list.slice(0, order % list.length)];
  return `{${rotated.map(([k, v]) => `${jsonText(k, escape)}:${jsonText(v, escape)}`).join(',')}}`;
}

function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const raw = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(raw) ? `"${raw.replace(/"/g, '""')}"` : raw;
}

type Body = { format: Format; bytes: Buffer; unclosedQuote: boolean };

type Style = { order: number; sameOrder?: boolean; escape: boolean; bom: boolean; breaks: number; unclosedQuote: boolean };

/** The body of a batch in `format`, the marker of bad bytes made into bytes that are not UTF-8. */
function bodyOf(stationId: string, readings: Reading[], format: Format, style: Style): Body {
  // Keys in the same order in every reading (as a station's firmware writes them), or in another in each.
  const order = (i: number) => (style.sameOrder ? style.order : style.order + i);
  let text: string;
  if (format === 'json') {
    text = `{"station_id":${JSON.stringify(stationId)},"readings":[${readings.map((r, i) => objectText(r, order(i), style.escape)).join(',')}]}`;
  } else if (format === 'ndjson') {
    text = readings.map((r, i) => objectText(r, order(i), style.escape)).join(style.breaks % 2 ? '\r\n' : '\n');
  } else {
    const columns = [...new Set(readings.flatMap((r) => members(r).map(([k]) => k)))];
    const lineBreaks = ['\r\n', '\n', '\r'];
    const rows = readings.map((r) => {
      const own = new Map(members(r));
      return columns.map((c) => csvField(own.get(c))).join(',');
    });
    if (style.unclosedQuote && rows.length > 1) rows[rows.length - 2] += ',"never closed';
    text = [columns.join(','), ...rows].map((line, i) => line + lineBreaks[(style.breaks + i) % 3]).join('');
  }
  const parts = text.split(badBytes);
  const bytes = Buffer.concat(parts.flatMap((part, i) => (i === 0 ? [Buffer.from(part)] : [Buffer.from([0xff, 0xc0, 0xaf]), Buffer.from(part)])));
  return { format, bytes: style.bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]) : bytes, unclosedQuote: format === 'csv' && style.unclosedQuote && readings.length > 1 };
}

/** The row the archive must hold for a good reading: derived from the reading alone. */
function expectedRow(stationId: string, r: Reading) {
  const values = Object.fromEntries(measurements.map((m) => [m, r.values[m] === undefined || r.values[m] === null ? null : r.values[m] === 0 ? 0 : r.values[m]]));
  const suspect = Object.entries(bounds).some(([m, [min, max]]) => {
    const value = values[m] as number | null;
    return value !== null && (value < min || value > max);
  });
  const hasModule = r.moduleData !== undefined || Object.keys(r.channels).length > 0;
  return {
    station_id: stationId,
    ts: r.ts,
    ...values,
    quality_flag: suspect ? 'suspect' : 'ok',
    firmware_version: r.firmware ?? null,
    module_data: hasModule ? (JSON.parse(JSON.stringify({ ...(r.moduleData ?? {}), ...r.channels })) as unknown) : null,
  };
}

const storedRow = z.object({
  station_id: z.string(), ts: z.string(),
  temperature_c: z.number().nullable(), humidity_rh: z.number().nullable(), pressure_hpa: z.number().nullable(), altitude_m: z.number().nullable(),
  pm1_0: z.number().nullable(), pm2_5: z.number().nullable(), pm10: z.number().nullable(), co2_ppm: z.number().nullable(),
  co_ppm: z.number().nullable(), uv_index: z.number().nullable(), quality_flag: z.string(), firmware_version: z.string().nullable(),
  module_data: z.unknown(),
});

async function storedRows(env: TestEnv, stations: string[]) {
  return env.db.pool.any(sql.type(storedRow)`
    select station_id, ts, temperature_c, humidity_rh, pressure_hpa, altitude_m, pm1_0, pm2_5, pm10, co2_ppm, co_ppm, uv_index,
           quality_flag, firmware_version, module_data
    from readings where station_id = any(${sql.array(stations, 'text')}) order by station_id, ts`);
}

async function post(env: TestEnv, key: string, body: Body) {
  const response = await env.get('/api/v1/ingest/environmental/', {
    method: 'POST',
    headers: { 'Content-Type': mediaTypes[body.format], Authorization: `Token ${key}` },
    body: body.bytes,
  });
  return { status: response.status, body: (await response.json()) as { accepted: number; duplicates: number; errors: number; error_details: { index: number }[] } };
}

type Batch = { station: number; readings: Reading[]; body: Body };

describeEngines('stations posting alternately and at once (differential)', (env) => {
  it(`stores every value in the field and station it was sent for, in every format (${rounds} rounds, FUZZ_SEED=${seed})`, async function () {
    this.timeout(600_000);
    const stations = ['mix-a', 'mix-b', 'mix-c'];
    const keys = await Promise.all(stations.map((s) => stationWithKey(env(), s)));
    const minutes = [0, 0, 0];
    const sent: Batch[] = [];
    const expected = new Map<string, ReturnType<typeof expectedRow>>();

    // A round: a batch from each station in turn, posted one after another or all at once, with now and
    // then a batch sent again (all duplicates) or a large one.
    const roundArb = fc.record({
      concurrent: fc.boolean(),
      sizes: fc.tuple(...stations.map(() => fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 60 }) }, fc.constant(2_000)))),
      formats: fc.tuple(...stations.map(() => fc.constantFrom<Format>('json', 'ndjson', 'csv'))),
      styles: fc.tuple(...stations.map(() => fc.record({ order: fc.nat(20), sameOrder: fc.boolean(), escape: fc.boolean(), bom: fc.boolean(), breaks: fc.nat(5), unclosedQuote: fc.oneof({ weight: 8, arbitrary: fc.constant(false) }, fc.constant(true)) }))),
      resend: fc.option(fc.nat(), { freq: 3 }),
      readingSeeds: fc.tuple(...stations.map(() => fc.integer())),
    });
    for (const [round, plan] of fc.sample(roundArb, { seed, numRuns: rounds }).entries()) {
      const batches: Batch[] = stations.map((stationId, s) => {
        const base = Date.UTC(2025, 0, 1) + s * 7 * 86_400_000;
        const readings = fc.sample(
          fc.tuple(...Array.from({ length: plan.sizes[s]! }, (_, i) => readingArb(new Date(base + (minutes[s]! + i) * 60_000).toISOString()))),
          { seed: plan.readingSeeds[s]!, numRuns: 1 },
        )[0]!;
        minutes[s]! += readings.length;
        return { station: s, readings, body: bodyOf(stationId, readings, plan.formats[s]!, plan.styles[s]!) };
      });
      if (plan.resend !== null && sent.length > 0) batches.push(sent[plan.resend % sent.length]!);
      const check = async (batch: Batch, answer: Awaited<ReturnType<typeof post>>, again: boolean) => {
        const what = `round ${round}, ${stations[batch.station]} ${batch.body.format}${again ? ' sent again' : ''}`;
        if (batch.body.unclosedQuote) {
          assert.equal(answer.status, 400, what);
          return;
        }
        assert.equal(answer.status, 201, `${what}: ${JSON.stringify(answer.body)}`);
        const bad = batch.readings.flatMap((r, i) => (r.bad ? [i] : []));
        const good = batch.readings.length - bad.length;
        assert.equal(answer.body.accepted + answer.body.duplicates + answer.body.errors, batch.readings.length, what);
        assert.equal(answer.body.errors, bad.length, `${what}: ${JSON.stringify(answer.body.error_details.slice(0, 3))}`);
        assert.deepEqual(answer.body.error_details.map((d) => d.index), bad.slice(0, 100), what);
        assert.equal(answer.body.accepted, again ? 0 : good, what);
        if (!again) for (const r of batch.readings) if (!r.bad) expected.set(`${stations[batch.station]} ${r.ts}`, expectedRow(stations[batch.station]!, r));
      };
      const isResend = (batch: Batch) => sent.includes(batch);
      if (plan.concurrent) {
        const answers = await Promise.all(batches.map((b) => post(env(), keys[b.station]!, b.body)));
        for (const [i, batch] of batches.entries()) await check(batch, answers[i]!, isResend(batch));
      } else {
        for (const batch of batches) await check(batch, await post(env(), keys[batch.station]!, batch.body), isResend(batch));
      }
      for (const batch of batches) if (!isResend(batch) && !batch.body.unclosedQuote) sent.push(batch);
    }

    const rows = await storedRows(env(), stations);
    assert.equal(rows.length, expected.size, 'one stored row per good reading sent, no other');
    let checked = 0;
    for (const row of rows) {
      const want = expected.get(`${row.station_id} ${row.ts}`);
      assert.ok(want, `a row nobody sent: ${row.station_id} ${row.ts}`);
      assert.deepEqual(row, want, `${row.station_id} ${row.ts}`);
      checked++;
    }
    assert.ok(checked > 0);
    console.log(`      ${checked} readings of ${stations.length} stations checked field by field (FUZZ_SEED=${seed})`);
  });
});

describeEngines('two stations of one make posting alternately', (env) => {
  it(`stores each station's values in its own fields, batch after large batch (FUZZ_SEED=${seed})`, async function () {
    this.timeout(600_000);
    // Two stations sending the same shape, with other channels in the same places: a reader that
    // remembered one body's keys while reading the next would file one station's value under the other's.
    const shapes: Measurement[][] = [
      ['temperature_c', 'humidity_rh', 'pm1_0', 'co2_ppm'],
      ['temperature_c', 'humidity_rh', 'pm2_5', 'co2_ppm'],
    ];
    const stations = ['make-a', 'make-b'];
    const keys = await Promise.all(stations.map((s) => stationWithKey(env(), s)));
    // Values of one width, as a station's firmware prints them: both stations' bodies then have the same layout.
    const values = fc.sample(fc.integer({ min: 10, max: 99 }), { seed, numRuns: 2 * 2_000 * shapes[0]!.length * 8 });
    const expected = new Map<string, ReturnType<typeof expectedRow>>();
    let next = 0;
    for (let round = 0; round < 8; round++) {
      for (const [s, stationId] of stations.entries()) {
        const readings: Reading[] = Array.from({ length: 2_000 }, (_, i) => ({
          ts: new Date(Date.UTC(2025, 5, 1) + (round * 2_000 + i) * 60_000).toISOString(),
          values: Object.fromEntries(shapes[s]!.map((field) => [field, values[next++]!])),
          aliased: [], firmware: undefined, moduleData: undefined, channels: {}, bad: null,
        }));
        const format: Format = round % 2 ? 'ndjson' : 'json';
        const answer = await post(env(), keys[s]!, bodyOf(stationId, readings, format, { order: 0, sameOrder: true, escape: false, bom: false, breaks: 0, unclosedQuote: false }));
        assert.equal(answer.status, 201);
        assert.equal(answer.body.accepted, readings.length);
        for (const r of readings) expected.set(`${stationId} ${r.ts}`, expectedRow(stationId, r));
      }
    }
    const rows = await storedRows(env(), stations);
    assert.equal(rows.length, expected.size);
    const misfiled = rows.filter((row) => !isDeepStrictEqual(row, expected.get(`${row.station_id} ${row.ts}`)));
    assert.deepEqual(misfiled.slice(0, 3), [], `${misfiled.length} of ${rows.length} readings differ from what was sent`);
  });
});
