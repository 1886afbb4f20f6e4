import assert from 'node:assert/strict';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { assertClose, periods, type Period } from './exactness.js';

const oracleRow = z.object({
  period_start: z.string(),
  count: z.number(),
  temperature_c_mean: z.number().nullable(),
  temperature_c_min: z.number().nullable(),
  temperature_c_max: z.number().nullable(),
  humidity_rh_mean: z.number().nullable(),
  pressure_hpa_mean: z.number().nullable(),
  pm2_5_mean: z.number().nullable(),
});
type OracleRow = z.infer<typeof oracleRow>;

export type Range = { from?: string; to?: string };

/** The oracle: a GROUP BY over the raw readings, UTC buckets and UTC days named explicitly. */
export function rawAggregate(db: CommonQueryMethods, station: string, period: Period, quality?: string, range: Range = {}) {
  return db.any(sql.type(oracleRow)`
    select date_trunc(${period}, ts, 'UTC') as period_start, count(*)::int as count,
      avg(temperature_c) as temperature_c_mean, min(temperature_c) as temperature_c_min, max(temperature_c) as temperature_c_max,
      avg(humidity_rh) as humidity_rh_mean, avg(pressure_hpa) as pressure_hpa_mean, avg(pm2_5) as pm2_5_mean
    from readings
    where station_id = ${station}
      ${quality ? sql.fragment`and quality_flag = ${quality}` : sql.fragment``}
      ${range.from ? sql.fragment`and ts >= (${range.from}::date)::timestamp at time zone 'UTC'` : sql.fragment``}
      ${range.to ? sql.fragment`and ts < (${range.to}::date + 1)::timestamp at time zone 'UTC'` : sql.fragment``}
    group by 1 order by 1
  `);
}

/**
 * Asserts that `/data/aggregate/` of `origin` equals the raw GROUP BY for every period and quality filter
 * (and the given date range). Returns how many buckets were compared.
 */
export async function assertAggregateApiExact(origin: string, db: CommonQueryMethods, station: string, range: Range = {}): Promise<number> {
  let compared = 0;
  for (const period of periods) {
    for (const quality of [undefined, 'ok', 'suspect', 'invalid']) {
      const params = new URLSearchParams({
        station, period, ...(quality ? { quality } : {}), ...(range.from ? { from_date: range.from } : {}), ...(range.to ? { to_date: range.to } : {}),
      });
      const response = await fetch(`${origin}/api/v1/data/aggregate/?${params}`);
      assert.equal(response.status, 200, `aggregate ${params}`);
      const body = (await response.json()) as { results: (OracleRow & Record<string, unknown>)[] };
      const expected = await rawAggregate(db, station, period, quality, range);
      const what = `${period} ${quality ?? 'all'} ${range.from ?? ''}..${range.to ?? ''}`;
      assert.deepEqual(
        body.results.map((r) => [r.period_start, r.count]),
        expected.map((r) => [r.period_start, r.count]),
        `${what}: buckets and counts`,
      );
      expected.forEach((e, i) => {
        for (const key of ['temperature_c_mean', 'temperature_c_min', 'temperature_c_max', 'humidity_rh_mean', 'pm2_5_mean'] as const) {
          assertClose(body.results[i]![key] as number | null, e[key], `${what} ${e.period_start} ${key}`);
        }
      });
      compared += expected.length;
    }
  }
  return compared;
}
