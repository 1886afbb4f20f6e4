import assert from 'node:assert/strict';
import { sql, type CommonQueryMethods } from 'slonik';
import { z } from 'zod';
import { allMetrics, statisticsOf } from './exactStatistics.js';
import { periods, type Period } from './exactness.js';

export type Range = { from?: string; to?: string };

const valuesRow = z.object({ period_start: z.string(), count: z.number(), expected: z.number() }).catchall(z.array(z.number().nullable()));
/** A bucket as the oracle gives it: its start, readings, expected readings, and `<metric>_<stat>` figures. */
export type OracleRow = { period_start: string; count: number; expected: number } & Record<string, number | null>;

/**
 * The oracle: the raw readings of each bucket (UTC buckets and UTC days named explicitly), read as they
 * are, and per metric its count, mean, min, max and sample standard deviation computed from them apart
 * from the database (exactStatistics); and the readings the station's interval implies for the part of
 * each bucket inside the range.
 */
export async function rawAggregate(db: CommonQueryMethods, station: string, period: Period, quality?: string, range: Range = {}): Promise<OracleRow[]> {
  const start = range.from ? sql.fragment`(${range.from}::date)::timestamp at time zone 'UTC'` : sql.fragment`'-infinity'::timestamptz`;
  const end = range.to ? sql.fragment`(${range.to}::date + 1)::timestamp at time zone 'UTC'` : sql.fragment`'infinity'::timestamptz`;
  const values = sql.join(allMetrics.map((m) => sql.fragment`array_agg(${sql.identifier([m])}) as ${sql.identifier([m])}`), sql.fragment`, `);
  const rows = await db.any(sql.type(valuesRow)`
    select to_char(b.bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as period_start, b.count,
      ceil(extract(epoch from least((b.bucket at time zone 'UTC' + ${`1 ${period}`}::interval) at time zone 'UTC', ${end})
        - greatest(b.bucket, ${start})) / s.interval_seconds)::int as expected,
      ${sql.join(allMetrics.map((m) => sql.identifier(['b', m])), sql.fragment`, `)}
    from (
      select date_trunc(${period}, ts, 'UTC') as bucket, count(*)::int as count, ${values}
      from readings
      where station_id = ${station}
        ${quality ? sql.fragment`and quality_flag = ${quality}` : sql.fragment``}
        and ts >= ${start} and ts < ${end}
      group by 1
    ) b, stations s
    where s.station_id = ${station}
    order by b.bucket
  `);
  return rows.map((row) => ({ period_start: row.period_start, count: row.count, expected: row.expected, ...statisticsOf(row) }) as OracleRow);
}

/** One API result against its oracle row: every figure to the bit, and coverage. */
export function assertResult(result: Record<string, unknown>, oracle: OracleRow, fields: string[], what: string): void {
  assert.equal(result.period_start, oracle.period_start, what);
  assert.equal(result.count, oracle.count, `${what} count`);
  assert.equal(result.expected, oracle.expected, `${what} expected`);
  assert.equal(result.coverage_pct, oracle.expected > 0 ? Math.round((oracle.count / oracle.expected) * 1000) / 10 : null, `${what} coverage_pct`);
  for (const field of fields) {
    assert.ok(field in result, `${what}: ${field} missing`);
    assert.equal(result[field], oracle[field], `${what} ${field}`);
  }
}

/** The fields of a result without `metrics`: api.md's, then the standard deviations of the metrics it gives means of. */
export const defaultFields = [
  'temperature_c_mean', 'temperature_c_min', 'temperature_c_max', 'humidity_rh_mean', 'pressure_hpa_mean', 'pm2_5_mean',
  'temperature_c_sd', 'humidity_rh_sd', 'pressure_hpa_sd', 'pm2_5_sd',
];

/** The fields of a result with `metrics`: each metric's five statistics. */
export const metricFields = (metrics: readonly string[]) => metrics.flatMap((m) => ['count', 'mean', 'min', 'max', 'sd'].map((s) => `${m}_${s}`));

/**
 * Asserts that `/data/aggregate/` of `origin` equals the raw GROUP BY for every period and quality filter
 * (and the given date range): without `metrics`, its default fields (and nothing else), and with `metrics`
 * naming every metric, each one's count, mean, min, max and sd. Returns how many buckets were compared.
 */
export async function assertAggregateApiExact(origin: string, db: CommonQueryMethods, station: string, range: Range = {}): Promise<number> {
  let compared = 0;
  for (const period of periods) {
    for (const quality of [undefined, 'ok', 'suspect', 'invalid']) {
      const expected = await rawAggregate(db, station, period, quality, range);
      for (const metrics of [undefined, allMetrics.join(',')]) {
        const params = new URLSearchParams({
          station, period, ...(quality ? { quality } : {}), ...(metrics ? { metrics } : {}),
          ...(range.from ? { from_date: range.from } : {}), ...(range.to ? { to_date: range.to } : {}),
        });
        const response = await fetch(`${origin}/api/v1/data/aggregate/?${params}`);
        assert.equal(response.status, 200, `aggregate ${params}`);
        const body = (await response.json()) as { results: Record<string, unknown>[] };
        const what = `${period} ${quality ?? 'all'} ${metrics ? 'every metric' : 'default'} ${range.from ?? ''}..${range.to ?? ''}`;
        assert.deepEqual(body.results.map((r) => r.period_start), expected.map((r) => r.period_start), `${what}: buckets`);
        const fields = metrics ? metricFields(allMetrics) : defaultFields;
        expected.forEach((e, i) => {
          assert.deepEqual(Object.keys(body.results[i]!).sort(), ['period_start', 'count', 'expected', 'coverage_pct', ...fields].sort(), `${what}: fields`);
          assertResult(body.results[i]!, e, fields, `${what} ${e.period_start}`);
        });
        compared += expected.length;
      }
    }
  }
  return compared;
}

export { allMetrics, periods, type Period };
