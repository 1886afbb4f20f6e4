import { addRoute, type Api } from '../../http/route.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { dateSchema, stationIdSchema } from '../../http/params.js';
import { notFound } from '../../http/problem.js';
import { z } from '../../http/zod.js';
import { dateRangeErrors } from '../core/params.js';
import { qcConfigInForce, qcConfigOf, qcConfigSchema } from '../core/qc/config.js';
import { qualityReport } from './report.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';

const stationParams = z.object({ station_id: stationIdSchema });

// A year of one-minute readings is what a report reads at most at once.
const maxReportDays = 366;

const reportQuerySchema = z.object({
  from_date: dateSchema.optional().openapi({ description: 'First UTC day, inclusive; 29 days before to_date when omitted' }),
  to_date: dateSchema.optional().openapi({ description: 'Last UTC day, inclusive; today when omitted' }),
});

const flagCounts = z.object({ pass: z.number().int(), not_evaluated: z.number().int(), suspect: z.number().int(), fail: z.number().int(), missing: z.number().int() });
const reportSchema = z
  .object({
    station: z.string(),
    from: z.string().openapi({ format: 'date' }),
    to: z.string().openapi({ format: 'date' }),
    interval_seconds: z.number().int(),
    expected: z.number().int().openapi({ description: 'Readings the interval implies from the first day\'s start up to the last day\'s end or now, rounded up' }),
    observed: z.number().int(),
    coverage_pct: z.number().nullable(),
    gaps: z.array(z.object({
      start: z.string().datetime().openapi({ description: 'The first instant a reading is missing' }),
      end: z.string().datetime().openapi({ description: 'The last instant a reading is missing' }),
      missing: z.number().int(),
    })).openapi({ description: 'Runs of more than three missing readings: between two readings, their spacing in intervals (rounded) less one; also before the first reading and after the last' }),
    flat_lines: z.array(z.object({
      metric: z.string(), start: z.string().datetime(), end: z.string().datetime(), readings: z.number().int(), value: z.number(),
    })).openapi({ description: 'Per metric with a flat-line test: runs of consecutive readings within its tolerance (taken from the first reading on; missing values left out) lasting at least its suspect threshold' }),
    spikes: z.record(z.number().int()).openapi({ description: 'Per metric with a spike test: readings it flagged suspect or fail' }),
    daily: z.array(z.object({
      date: z.string().openapi({ format: 'date' }),
      expected: z.number().int(),
      observed: z.number().int(),
      coverage_pct: z.number().nullable(),
      flags: z.record(flagCounts).openapi({ description: 'Per metric: readings by aggregate QARTOD flag' }),
    })),
    latest_age_minutes: z.number().nullable().openapi({ description: 'Minutes since the station\'s newest reading (one decimal); null without readings' }),
  })
  .openapi('QualityReport');

const configAnswer = qcConfigSchema.openapi({
  description: 'The station\'s quality-control configuration in ioos_qc\'s format (`ioos_qc.config.Config` loads it unchanged); streams are the columns of a download',
});

const today = () => new Date().toISOString().slice(0, 10);

/**
 * The days a report covers: those asked for (the 30 days to today by default), from the day of the
 * station's first reading, up to today, the last `maxReportDays` of them. A range wholly in the future
 * is its first day, which has nothing yet.
 */
function reportDays(fromDate: string | undefined, toDate: string | undefined, first: string | null) {
  let to = toDate ?? today();
  let from = fromDate ?? daysBefore(to, 29);
  if (from > today()) return { from, to: from };
  if (to > today()) to = today();
  if (first && from < first && first <= to) from = first;
  if (Date.parse(to) - Date.parse(from) >= maxReportDays * 86_400_000) from = daysBefore(to, maxReportDays - 1);
  return { from, to };
}
const daysBefore = (date: string, days: number) => new Date(Date.parse(`${date}T00:00:00Z`) - days * 86_400_000).toISOString().slice(0, 10);

/** A station's quality-control configuration and its quality report. */
export function addQualityRoutes(api: Api, spacings: SeriesSpacings): void {
  const { db } = api.deps;

  const stationOf = async (stationId: string) => {
    const { rows } = await db.readPool.read<{ interval_seconds: number; latest: number | null; first: string | null }>({
      text: `select s.interval_seconds, extract(epoch from l.ts)::float8 * 1000 as latest,
                    to_char(coalesce(l.first_ts, (select min(ts) from readings r where r.station_id = s.station_id)) at time zone 'UTC', 'YYYY-MM-DD') as first
             from stations s left join station_latest l using (station_id) where s.station_id = $1`,
      values: [stationId],
    });
    if (!rows[0]) throw notFound(`station '${stationId}' is unknown`);
    return rows[0];
  };

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/stations/:station_id/qc/', operationId: 'stationQcConfig', cache: cachePolicy.live, tag: 'Quality',
      summary: 'The QARTOD tests a station\'s readings are flagged by, in ioos_qc\'s configuration format',
      description: 'The tests and thresholds behind `qc=true` and `qc=pass`: per stream (a download column), `qartod`, then each test with its keyword arguments, as ioos_qc takes them. Run ioos_qc with it on a full download of the station to get the same flags. `X-QC-Config` says whether they are the defaults or the station\'s own.',
      params: stationParams,
      responses: {
        200: { description: 'The configuration', content: { 'application/json': configAnswer }, headers: { 'X-QC-Config': 'default, or station when the station has its own' } },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { params }) => {
      await stationOf(params.station_id);
      const { config, own } = await qcConfigInForce(db.readPool, params.station_id);
      ctx.set('X-QC-Config', own ? 'station' : 'default');
      ctx.body = config;
    },
  );

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/stations/:station_id/quality/', operationId: 'stationQualityReport', cache: cachePolicy.live, tag: 'Quality',
      cost: () => 'computed',
      summary: 'A station\'s data quality over whole UTC days: coverage, gaps, flat lines, spikes, and flags per day',
      description: `From the readings and the QARTOD flags of the station's configuration (/api/v1/stations/{station_id}/qc/). The report covers the days asked for from the day of the station's first reading up to today (counting up to now), at most the last ${maxReportDays} of them; \`from\` and \`to\` say which days it covers.`,
      params: stationParams,
      query: reportQuerySchema,
      checks: (q) => dateRangeErrors(q),
      responses: {
        200: { description: 'The report', content: { 'application/json': reportSchema } },
        404: { description: 'The station is unknown' },
      },
    },
    async (ctx, { params, query }) => {
      const station = await stationOf(params.station_id);
      const { from, to } = reportDays(query.from_date, query.to_date, station.first);
      const config = await qcConfigOf(db.readPool, params.station_id);
      ctx.body = await db.replicas.prefer(({ streamPool }) => qualityReport(streamPool, {
        stationId: params.station_id, from, to, intervalSeconds: station.interval_seconds, latest: station.latest, now: Date.now(), spacings,
      }, config));
    },
  );
}
