import { parquetType } from '../../formats/parquet.js';
import { addRoute, type Api } from '../../http/route.js';
import { cachePolicy } from '../../http/cachePolicy.js';
import { clientSlots, guardStream } from '../../http/streamGuard.js';
import { z } from '../../http/zod.js';
import { attributeDownload, citation, downloadFileName, parquetMetadata, preamble } from '../core/attribution.js';
import { acceptDatetimeHeader, asOfPools, mementoHeader, readAsOf, readAsOfOn } from '../core/asOf.js';
import { requireStations, stationParam } from '../core/scope.js';
import { qcConfigsOf } from '../core/qc/config.js';
import { streamDownload, streamParquetDownload } from './download.js';
import { downloadRequest } from './requests.js';
import { downloadErrors, downloadQuerySchema, maxDownloadStations } from './schema.js';
import type { SeriesSpacings } from '../core/qc/spacings.js';

/** /data/download/: a station's or several stations' whole history as CSV or Parquet, streamed. */
export function addExportRoutes(api: Api, spacings: SeriesSpacings): void {
  const { config, db } = api.deps;
  const claimDownloadSlot = clientSlots(config.downloadsPerClient, `at most ${config.downloadsPerClient} downloads at a time per client; wait for one to finish`);

  addRoute(
    api,
    {
      method: 'get', path: '/api/v1/data/download/', operationId: 'downloadReadings', cache: cachePolicy.download, tag: 'Readings',
      summary: 'Full history as CSV or Parquet, streamed, with licence and citation',
      description: `One station (\`station\`) or several (\`stations\`, at most ${maxDownloadStations}, with station_id as first column, sorted by timestamp): one of the two is required${config.defaultStation ? ` unless DEFAULT_STATION (${config.defaultStation}) stands for station` : ''}, and giving both is a 400. Dates are inclusive whole UTC days. With \`as_of\`, the archive as it stood at that instant: the citation line, the Parquet metadata (\`as_of\`) and \`Memento-Datetime\` name it.`,
      query: downloadQuerySchema(config.defaultStation),
      headers: acceptDatetimeHeader,
      checks: downloadErrors,
      responses: {
        200: {
          description: 'CSV: comment lines with licence and citation, a header row, then the readings; or (output=parquet) a Parquet file of the same columns, the licence and citation in its key-value metadata',
          content: { 'text/csv': z.string(), [parquetType]: z.string().openapi({ format: 'binary' }) },
          headers: { ...mementoHeader, 'X-Attribution': 'The citation, ending with the address asked (its query less `output`)', 'Content-Disposition': 'The file\'s name' },
        },
        404: { description: 'A station is unknown' },
        429: { description: 'This client already has DOWNLOADS_PER_CLIENT (2) downloads open' },
      },
    },
    async (ctx, { query }) => {
      // Checked before the first byte: once the CSV streams, the status cannot change.
      const request = downloadRequest(query, query.stations ?? [stationParam(query.station, config.defaultStation)]);
      const { stationIds, range } = request;
      const asOf = readAsOf(ctx, query.as_of);
      await requireStations(db.pool, stationIds);
      claimDownloadSlot(ctx);
      const cite = citation(config.baseUrl, stationIds, range, { kind: 'readings' }, asOf, ctx.querystring);
      const parquet = query.output === 'parquet';
      const pools = await asOfPools(db, asOf, stationIds);
      const qc = query.qc || parquet ? await qcConfigsOf(db.readPool, stationIds, asOf?.iso) : undefined;
      const args = request.args(asOf, qc, spacings);
      const body = await readAsOfOn(db, pools, ({ streamPool }) => parquet
        ? streamParquetDownload(streamPool, args, parquetMetadata(cite, asOf))
        : streamDownload(streamPool, args, preamble(cite, request.columns)));
      ctx.type = query.output === 'parquet' ? parquetType : 'text/csv; charset=utf-8';
      attributeDownload(ctx, downloadFileName(stationIds, range, { kind: 'readings' }, query.output), cite);
      guardStream(ctx, body, { deadlineMs: config.downloadTimeoutMs, stallMs: config.streamStallMs });
      ctx.body = body;
    },
  );
}
