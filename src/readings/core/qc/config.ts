import { sql, type CommonQueryMethods } from 'slonik';
import type { PgPool } from '../../../db/pool.js';
import { z } from '../../../http/zod.js';
import { readingFields, type NumericField } from '../../reading.js';
import type { FlatLineArgs, GrossRangeArgs, RateOfChangeArgs, SpikeArgs, TimeGapArgs } from './qartod.js';

/**
 * A metric's stream: its name in quality-control configurations, which is its column's name in downloads
 * (temperature_c, pm2_5_ugm3, uv_index), so that ioos_qc runs the published configuration on a
 * download's columns unchanged.
 */
export const qcStreams = readingFields.map((f) => ({ field: f.name as NumericField, stream: 'download' in f ? f.download : f.name }));
const streamNames = qcStreams.map((s) => s.stream) as [string, ...string[]];

/** The tests envmon runs, by their ioos_qc names, in the order their flags are given. */
export const qcTests = ['gross_range_test', 'spike_test', 'rate_of_change_test', 'flat_line_test', 'time_gap_test'] as const;
export type QcTest = (typeof qcTests)[number];

export type StreamTests = {
  gross_range_test?: GrossRangeArgs;
  spike_test?: SpikeArgs;
  rate_of_change_test?: RateOfChangeArgs;
  flat_line_test?: FlatLineArgs;
  time_gap_test?: TimeGapArgs;
};

/** A configuration in ioos_qc's format: streams, then the qartod module, then each test's keyword arguments. */
export type QcConfig = { streams: Record<string, { qartod: StreamTests }> };

const finite = z.number().finite();
const span = z.tuple([finite, finite]);
const positive = finite.positive();
const testsSchema = z
  .object({
    gross_range_test: z.object({ fail_span: span, suspect_span: span.nullable().optional() }).strict()
      .refine((t) => !t.suspect_span || (Math.min(...t.suspect_span) >= Math.min(...t.fail_span) && Math.max(...t.suspect_span) <= Math.max(...t.fail_span)), 'suspect_span must fall within fail_span'),
    spike_test: z.object({ suspect_threshold: positive.nullable().optional(), fail_threshold: positive.nullable().optional(), method: z.literal('average').optional() }).strict(),
    rate_of_change_test: z.object({ threshold: positive, fail_threshold: positive.nullable().optional() }).strict(),
    flat_line_test: z.object({ suspect_threshold: positive, fail_threshold: positive, tolerance: finite.nonnegative().optional() }).strict(),
    time_gap_test: z.object({ fail_span: positive.optional() }).strict(),
  })
  .partial()
  .strict();

/** A configuration as `envmon qc set` takes it: ioos_qc's format, the tests above, the streams of a reading. */
export const qcConfigSchema = z
  .object({
    streams: z.record(z.enum(streamNames), z.object({ qartod: testsSchema }).strict()),
  })
  .strict()
  .openapi('QcConfig', { description: 'An ioos_qc configuration: streams (download column names), then `qartod`, then each test\'s keyword arguments' });

// Two hours: ioos_qc's own default for the time-gap test.
const timeGap = { fail_span: 2 };

/**
 * The tests every station runs unless it has its own configuration. Gross-range fail spans are the
 * plausibility bounds readings are flagged suspect by on ingest, or the measuring range of common
 * sensors; suspect spans what the stations' climates make possible. Spike and rate-of-change
 * thresholds are changes between readings a minute apart that the air does not make; flat lines are
 * hours in which a sensor's value does not move by its resolution; time gaps are ioos_qc's two hours.
 */
export const defaultQcConfig: QcConfig = {
  streams: {
    // Air temperature: a sensor's -50..60 °C range; beyond -40..50 °C no station of the network has been.
    // More than 3 °C away from its neighbours' mean, or 3 °C a minute, is not the air. Within 0.05 °C
    // (below a sensor's 0.1 °C resolution) for three hours is a stuck sensor.
    temperature_c: { qartod: {
      gross_range_test: { fail_span: [-50, 60], suspect_span: [-40, 50] },
      spike_test: { suspect_threshold: 3, fail_threshold: 8 },
      rate_of_change_test: { threshold: 0.05, fail_threshold: 0.2 },
      flat_line_test: { suspect_threshold: 10800, fail_threshold: 21600, tolerance: 0.05 },
      time_gap_test: timeGap,
    } },
    // Relative humidity: 0..100 % by definition, below 2 % never outdoors; 10 % off its neighbours or 12 %
    // a minute is a wet or loose sensor; fog may hold 100 % for hours, so flat lines start at six.
    humidity_rh: { qartod: {
      gross_range_test: { fail_span: [0, 100], suspect_span: [2, 100] },
      spike_test: { suspect_threshold: 10, fail_threshold: 25 },
      rate_of_change_test: { threshold: 0.2, fail_threshold: 1 },
      flat_line_test: { suspect_threshold: 21600, fail_threshold: 43200, tolerance: 0.05 },
      time_gap_test: timeGap,
    } },
    // Station pressure: the 300..1100 hPa plausibility bounds; 500..1080 hPa spans stations up to 5,500 m
    // and the deepest cyclones. Weather moves it under 1 hPa an hour, so 2 hPa off its neighbours or
    // 1.2 hPa a minute is the sensor; it can hold within 0.05 hPa for hours, not for twelve.
    pressure_hpa: { qartod: {
      gross_range_test: { fail_span: [300, 1100], suspect_span: [500, 1080] },
      spike_test: { suspect_threshold: 2, fail_threshold: 5 },
      rate_of_change_test: { threshold: 0.02, fail_threshold: 0.1 },
      flat_line_test: { suspect_threshold: 43200, fail_threshold: 86400, tolerance: 0.05 },
      time_gap_test: timeGap,
    } },
    // PM2.5: the 0..1000 µg/m³ plausibility bounds, a low-cost sensor's range; over 500 only in wildfire
    // smoke. Plumes are real, so only 50 µg/m³ off both neighbours counts as a spike; clean air may read
    // 0 for a night, not for a day.
    pm2_5_ugm3: { qartod: {
      gross_range_test: { fail_span: [0, 1000], suspect_span: [0, 500] },
      spike_test: { suspect_threshold: 50, fail_threshold: 200 },
      rate_of_change_test: { threshold: 2, fail_threshold: 10 },
      flat_line_test: { suspect_threshold: 43200, fail_threshold: 86400, tolerance: 0.05 },
      time_gap_test: timeGap,
    } },
    // PM10: twice PM2.5's range, as the common sensors give it; dust events reach 1000 µg/m³.
    pm10_ugm3: { qartod: {
      gross_range_test: { fail_span: [0, 2000], suspect_span: [0, 1000] },
      spike_test: { suspect_threshold: 80, fail_threshold: 300 },
      rate_of_change_test: { threshold: 3, fail_threshold: 15 },
      flat_line_test: { suspect_threshold: 43200, fail_threshold: 86400, tolerance: 0.05 },
      time_gap_test: timeGap,
    } },
    // CO2: an NDIR sensor's 0..10000 ppm; outdoor air lies within 350..2000 ppm. Within 0.5 ppm for six
    // hours is a sensor that stopped, as the air never holds that still.
    co2_ppm: { qartod: {
      gross_range_test: { fail_span: [0, 10000], suspect_span: [350, 2000] },
      spike_test: { suspect_threshold: 50, fail_threshold: 200 },
      rate_of_change_test: { threshold: 2, fail_threshold: 10 },
      flat_line_test: { suspect_threshold: 21600, fail_threshold: 43200, tolerance: 0.5 },
      time_gap_test: timeGap,
    } },
  },
};

/** A configuration with its streams in column order and each stream's tests in qcTests' order. */
export function orderedConfig(config: QcConfig): QcConfig {
  const streams: QcConfig['streams'] = {};
  for (const { stream } of qcStreams) {
    const tests = config.streams[stream]?.qartod;
    if (!tests) continue;
    const ordered: Record<string, unknown> = {};
    for (const test of qcTests) if (tests[test]) ordered[test] = tests[test];
    streams[stream] = { qartod: ordered as StreamTests };
  }
  return { streams };
}

/**
 * The configuration `stationId` runs at `at` (now when absent): its own, set by `envmon qc set`, else
 * the defaults. Every version is kept, so that a read as of an earlier instant flags as it did then.
 */
export async function qcConfigOf(pool: PgPool, stationId: string, at?: string): Promise<QcConfig> {
  return (await qcConfigInForce(pool, stationId, at)).config;
}

/** The configuration `stationId` runs at `at` (now when absent), and whether it is its own or the defaults. */
export async function qcConfigInForce(pool: PgPool, stationId: string, at?: string): Promise<{ config: QcConfig; own: boolean }> {
  const own = (await latestConfigs(pool, [stationId], at)).get(stationId);
  return own ? { config: orderedConfig(own), own: true } : { config: defaultQcConfig, own: false };
}

/** The configuration of each station at `at`, by station. */
export async function qcConfigsOf(pool: PgPool, stationIds: readonly string[], at?: string): Promise<Record<string, QcConfig>> {
  const own = await latestConfigs(pool, stationIds, at);
  return Object.fromEntries(stationIds.map((id) => {
    const config = own.get(id);
    return [id, config ? orderedConfig(config) : defaultQcConfig];
  }));
}

/** Each station's own configuration at `at` (now when absent), in one query: absent where it runs the defaults (none set, or the last one set null). */
async function latestConfigs(pool: PgPool, stationIds: readonly string[], at?: string): Promise<Map<string, QcConfig>> {
  const { rows } = await pool.read<{ station_id: string; config: QcConfig | null }>({
    text: `select distinct on (station_id) station_id, config from qc_configs
           where station_id = any($1::text[]) and set_at <= coalesce($2::timestamptz, clock_timestamp())
           order by station_id, set_at desc`,
    values: [[...stationIds], at ?? null],
  });
  return new Map(rows.flatMap((row) => (row.config ? [[row.station_id, row.config] as const] : [])));
}

/**
 * Sets the station's configuration from now on (null: the defaults again), with the operator's reason;
 * earlier versions are kept.
 */
export async function setQcConfig(db: CommonQueryMethods, stationId: string, config: QcConfig | null, reason: string | null = null): Promise<void> {
  await db.query(sql.unsafe`
    insert into qc_configs (station_id, config, reason)
    values (${stationId}, ${config ? sql.jsonb(orderedConfig(config) as never) : null}, ${reason})`);
}
