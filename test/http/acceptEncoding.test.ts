import assert from 'node:assert/strict';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines } from '../helpers/app.js';
import { addStation, makeReadings } from '../helpers/readings.js';

// Accept-Encoding headers that refuse every coding the service has, identity included.
const refusing = ['identity;q=0', '*;q=0', 'gzip;q=-1', 'deflate;q=1, identity;q=0', 'identity;q=0, br;q=0, gzip;q=0'];

describeEngines('an Accept-Encoding that refuses every coding', (env) => {
  it('is answered without a coding on every GET route, never with a 5xx', async function () {
    this.timeout(120_000);
    const { db } = env();
    await addStation(db, 'ae-one');
    await storeReadings(db, 'ae-one', makeReadings(2_000, new Date(Date.now() - 2 * 86_400_000).toISOString(), 1));
    const openapi = (await env().getJson('/api/v1/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
    // Every GET route without a path parameter, asked for the station this test stored: large answers
    // (a history, the OpenAPI document) as well as small ones. The live stream never ends: it is read
    // apart, its headers only.
    const paths = Object.entries(openapi.paths).filter(([path, ops]) => 'get' in ops && !path.includes('{') && !path.includes('/stream/')).map(([path]) => path);
    for (const header of refusing) {
      const stream = new AbortController();
      const response = await env().get('/api/v1/data/stream/?stations=ae-one', { headers: { 'Accept-Encoding': header }, signal: stream.signal });
      assert.equal(response.status, 200, header);
      assert.equal(response.headers.get('content-encoding'), null, header);
      stream.abort();
    }
    assert.ok(paths.length >= 15, `${paths.length} routes`);
    for (const path of paths) {
      for (const header of refusing) {
        const response = await env().get(`${path}?station=ae-one&stations=ae-one&metric=temperature_c`, { headers: { 'Accept-Encoding': header } });
        const body = Buffer.from(await response.arrayBuffer());
        assert.ok(response.status < 500, `${path} with ${header}: ${response.status} ${body.toString().slice(0, 200)}`);
        assert.equal(response.headers.get('content-encoding'), null, `${path} with ${header}`);
        // fetch decodes nothing here: the bytes are the answer itself.
        if (response.headers.get('content-type')?.includes('json')) assert.doesNotThrow(() => JSON.parse(body.toString()), `${path} with ${header}`);
      }
    }
  });
});
