import assert from 'node:assert/strict';
import { parse } from 'csv-parse/sync';
import { describeEngines, type TestEnv } from '../../helpers/app.js';
import { stationWithKey } from '../../helpers/ingest.js';
import { readParquet } from '../../helpers/parquet.js';

// Every field of a reading, posted in each format, read back from every way out in the field it was
// sent in. The expected values are the ones this test sent.

const measurements = ['temperature_c', 'humidity_rh', 'pressure_hpa', 'pm1_0', 'pm2_5', 'pm10', 'co2_ppm', 'co_ppm', 'uv_index'] as const;
const hour = 3_600_000;
const base = Math.floor(Date.now() / hour) * hour - 3 * hour;

/** Two readings in two hours: one with the device names (aliases), one with the canonical ones. */
function readings(offset: number) {
  const first = {
    timestamp: new Date(base + offset * 60_000).toISOString(),
    air_temp: 12.5 + offset, air_hum: 41.25, pressure: 1001.5, altitude_m: 412.75,
    pm1_0: 3.5, pm2_5: 8.25, pm10: 14, co2_ppm: 612, co_ppm: 0.4, uv_index: 2,
    firmware_version: 'fw-1.4 "β", ok', module_data: { board: 'v2', rssi: -71 }, soil_temp: 9.5, soil_moist: 33, wind_dir: 'NE',
  };
  const second = {
    timestamp: new Date(base + hour + offset * 60_000).toISOString(),
    temperature_c: -3.25, humidity_rh: 99.5, pressure_hpa: 870.125, altitude_m: 412.75,
    pm1_0: 0, pm2_5: 1001, pm10: 0.001, co2_ppm: 400.5, co_ppm: 12, uv_index: 11.5,
    firmware_version: 'fw-1.5', module_data: null, soil_temp: -1, soil_moist: 0.5, wind_dir: 'SW',
  };
  return [first, second];
}
type Sent = ReturnType<typeof readings>[number];

/** The Reading the API must give for a sent reading. */
function asRead(r: Sent) {
  const a = r as Record<string, unknown>;
  return {
    timestamp: r.timestamp,
    temperature_c: (a.temperature_c ?? a.air_temp) as number, humidity_rh: (a.humidity_rh ?? a.air_hum) as number,
    pressure_hpa: (a.pressure_hpa ?? a.pressure) as number, altitude_m: r.altitude_m,
    pm1_0: r.pm1_0, pm2_5: r.pm2_5, pm10: r.pm10, co2_ppm: r.co2_ppm, co_ppm: r.co_ppm, uv_index: r.uv_index,
    // pm2_5 beyond 1,000 is outside its plausibility bounds.
    quality_flag: r.pm2_5 > 1000 ? 'suspect' : 'ok',
    firmware_version: r.firmware_version,
    module_data: { ...(r.module_data ?? {}), soil_temp: r.soil_temp, soil_moist: r.soil_moist, wind_dir: r.wind_dir },
  };
}

const csvField = (value: unknown) => {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

const formats = {
  json: { type: 'application/json', body: (station: string, rs: Sent[]) => JSON.stringify({ station_id: station, readings: rs }) },
  ndjson: { type: 'application/x-ndjson', body: (_: string, rs: Sent[]) => rs.map((r) => JSON.stringify(r)).join('\n') },
  csv: {
    type: 'text/csv',
    body: (_: string, rs: Sent[]) => {
      const columns = [...new Set(rs.flatMap((r) => Object.keys(r)))];
      return [columns.join(','), ...rs.map((r) => columns.map((c) => csvField((r as Record<string, unknown>)[c])).join(','))].join('\r\n');
    },
  },
};

async function text(env: TestEnv, path: string): Promise<string> {
  const response = await env.get(path);
  assert.equal(response.status, 200, path);
  return response.text();
}

describeEngines('every field, every way in, every way out', (env) => {
  for (const [offset, [format, { type, body }]] of Object.entries(formats).entries()) {
    it(`reads back every field posted as ${format} from latest, historical, both downloads and the aggregates`, async () => {
      const station = `rt-${format}`;
      const key = await stationWithKey(env(), station);
      const sent = readings(offset);
      const response = await env().get('/api/v1/ingest/environmental/', { method: 'POST', headers: { 'Content-Type': type, Authorization: `Token ${key}` }, body: body(station, sent) });
      assert.equal(response.status, 201);
      assert.deepEqual(await response.json(), { accepted: 2, duplicates: 0, errors: 0, error_details: [] });
      const expected = sent.map(asRead);

      const latest = await env().getJson(`/api/v1/data/latest/?station=${station}`);
      assert.deepEqual(latest.body, expected[1]);
      const historical = await env().getJson(`/api/v1/data/historical/?station=${station}&hours=24`);
      assert.deepEqual(historical.body.readings, expected);

      // The CSV download as a researcher's parser reads it: comment lines skipped, the header naming the columns.
      const csvNames: Record<string, string> = { timestamp_utc: 'timestamp', pm2_5_ugm3: 'pm2_5', pm10_ugm3: 'pm10' };
      // The default columns, and every field with columns=all (module_data as JSON text, null as an empty field).
      for (const query of ['', '&columns=all']) {
        const csv = parse(await text(env(), `/api/v1/data/download/?station=${station}${query}`), { comment: '#', columns: true }) as Record<string, string>[];
        assert.equal(csv.length, 2);
        if (query) assert.equal(Object.keys(csv[0]!).length, 14, 'every field of a reading');
        csv.forEach((row, i) => {
          for (const [column, value] of Object.entries(row)) {
            const field = csvNames[column] ?? column;
            const want = (expected[i] as Record<string, unknown>)[field];
            assert.ok(want !== undefined, `the CSV column ${column} is a field of a reading`);
            const read = value === '' && want === null ? null : field === 'module_data' ? JSON.parse(value) : typeof want === 'number' ? Number(value) : value;
            assert.deepEqual(read, want, `${column} of row ${i}${query}`);
          }
        });
      }

      const parquet = await readParquet(new Uint8Array(await (await env().get(`/api/v1/data/download/?station=${station}&output=parquet`)).arrayBuffer()));
      assert.equal(parquet.rows.length, 2);
      // Every field of a reading, then each measured column's QARTOD flag.
      const fields = parquet.columns.filter((column) => !column.endsWith('_qc'));
      assert.equal(fields.length, 14, 'every field of a reading');
      assert.deepEqual(parquet.columns.slice(14), parquet.columns.slice(1, 14).filter((c) => c !== 'quality_flag' && c !== 'firmware_version' && c !== 'module_data').map((c) => `${c}_qc`));
      parquet.rows.forEach((row, i) => {
        for (const flag of row.slice(14)) assert.ok([1, 2, 3, 4, 9].includes(Number(flag)), `a QARTOD flag: ${flag}`);
        fields.forEach((column, c) => {
          const field = csvNames[column] ?? column;
          const want = (expected[i] as Record<string, unknown>)[field];
          const value = field === 'timestamp' ? new Date(Number(row[c] as bigint) / 1000).toISOString()
            : field === 'module_data' && typeof row[c] === 'string' ? JSON.parse(row[c]) : row[c];
          assert.deepEqual(value, want, `${column} of Parquet row ${i}`);
        });
      });

      // Each reading alone in its hour: count 1, and its value as the mean, the minimum and the maximum.
      const aggregate = await env().getJson(`/api/v1/data/aggregate/?station=${station}&period=hour&metrics=${measurements.join(',')}`);
      assert.equal(aggregate.status, 200);
      assert.equal(aggregate.body.results.length, 2);
      aggregate.body.results.forEach((bucket: Record<string, unknown>, i: number) => {
        assert.equal(bucket.period_start, new Date(Math.floor(Date.parse(expected[i]!.timestamp) / hour) * hour).toISOString());
        for (const m of measurements) {
          const want = (expected[i] as Record<string, unknown>)[m];
          assert.equal(bucket[`${m}_count`], 1, `${m}_count`);
          for (const stat of ['mean', 'min', 'max']) assert.equal(bucket[`${m}_${stat}`], want, `${m}_${stat} of bucket ${i}`);
        }
      });
    });
  }
});
