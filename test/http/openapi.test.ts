import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import fc from 'fast-check';
import { importContent, parseContentFile } from '../../src/content/importContent.js';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { issueKey } from '../../src/stations/keys.js';
import { firstEvent } from '../helpers/sse.js';
import { describeEngines } from '../helpers/app.js';
import { addStation, makeReadings } from '../helpers/readings.js';

// The document drives the test, as an OpenAPI property tester (schemathesis, for one) does: it generates
// valid and invalid requests for every operation from the declared parameters and bodies, and checks each
// answer against the declared status codes, content types and response schemas.

// ajv-formats is CommonJS: its function is the default export's default.
const addFormats = ((addFormatsImport as unknown as { default?: unknown }).default ?? addFormatsImport) as (ajv: Ajv2020) => Ajv2020;

const runs = Number(process.env.CONFORMANCE_RUNS ?? 30);
// Fixed, so that a failure is the same failure everywhere; CONFORMANCE_SEED explores others.
const seed = Number(process.env.CONFORMANCE_SEED ?? 20_261_124);

type Schema = {
  $ref?: string; type?: string | string[]; enum?: unknown[]; pattern?: string; format?: string; minimum?: number; maximum?: number;
  minLength?: number; maxLength?: number; minItems?: number; maxItems?: number; items?: Schema; properties?: Record<string, Schema>;
  required?: string[]; anyOf?: Schema[]; oneOf?: Schema[]; default?: unknown; additionalProperties?: boolean | Schema;
};
type Parameter = { name: string; in: 'query' | 'path' | 'header'; required?: boolean; schema: Schema };
type Response = { description: string; content?: Record<string, { schema: Schema }> };
type Operation = {
  operationId: string; parameters?: Parameter[]; security?: unknown[];
  requestBody?: { content: Record<string, { schema: Schema }> }; responses: Record<string, Response>;
};
type Document = { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } };

const typesOf = (schema: Schema) => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);

/** Every `default` in the document against its own schema's type and enum: code generators trust them. */
function badDefaults(node: unknown, where: string, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((item, i) => badDefaults(item, `${where}/${i}`, found));
  else if (node && typeof node === 'object') {
    const schema = node as Schema;
    if ('default' in schema && (schema.type || schema.enum)) {
      const value = schema.default;
      const fits = typesOf(schema).length === 0 || typesOf(schema).some((type) =>
        type === 'integer' ? Number.isInteger(value) : type === 'null' ? value === null : type === 'array' ? Array.isArray(value) : typeof value === type);
      if (!fits || (schema.enum && !schema.enum.includes(value))) found.push(`${where}: default ${JSON.stringify(value)} is not of ${JSON.stringify(schema.type ?? schema.enum)}`);
    }
    for (const [key, child] of Object.entries(node)) badDefaults(child, `${where}/${key}`, found);
  }
  return found;
}

describeEngines('the OpenAPI document', (env) => {
  let document: Document;
  let key = '';
  // Readings URLs of the stations made below, as a client keeping a snapshot would send them.
  const snapshotUrls = [
    '/api/v1/data/download/?station=oa-01&from_date=2025-06-01&to_date=2025-06-05',
    'http://envmon.test/api/v1/data/aggregate/?station=oa-02&period=day',
    '/api/v1/data/historical/?station=oa-01&hours=48',
    '/api/v1/data/compare/?stations=oa-01,oa-02&hours=24',
  ];

  before(async () => {
    document = (await env().getJson('/api/v1/openapi.json')).body;
    // Something to find: stations with recent and older readings, the demo content, a live key.
    for (const id of ['oa-01', 'oa-02']) {
      await addStation(env().db, id);
      await storeReadings(env().db, id, makeReadings(600, new Date(Math.floor(Date.now() / 60_000) * 60_000 - 601 * 60_000).toISOString(), 1, 3));
      await storeReadings(env().db, id, makeReadings(200, '2025-06-01T00:00:00Z', 60, 4));
    }
    key = (await issueKey(env().db.pool, 'oa-01')).key;
    await importContent(env().db.pool, parseContentFile(JSON.parse(readFileSync(path.resolve('src/content/demoContent.json'), 'utf8'))));
  });

  it('validates as OpenAPI 3.1, and every default fits its schema', async () => {
    const result = await new Validator().validate(document as never);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1));
    assert.deepEqual(badDefaults(document, '#'), []);
  });

  it('documents every route the server answers, and says which station parameter is required', async () => {
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    const discovery = (await env().getJson('/api/v1/')).body;
    assert.equal(operations.length, Object.keys(discovery.endpoints).length);
    assert.equal(operations.length, 36);
    const param = (p: string, name: string) => document.paths[p]!.get!.parameters!.find((x) => x.name === name)!;
    // No DEFAULT_STATION here: the station is required wherever api.md allows a default.
    assert.equal(param('/api/v1/data/historical/', 'station').required, true);
    assert.equal(param('/api/v1/data/aggregate/', 'station').required, true);
    assert.equal(param('/api/v1/data/profile/', 'station').required, true);
    assert.equal(param('/api/v1/data/download/', 'station').required, false, 'station or stations');
    assert.match(param('/api/v1/data/compare/', 'stations').schema.pattern ?? '', /\{0,9\}/);
    assert.equal(param('/api/v1/data/historical/', 'hours').schema.default, 24);
    assert.equal(param('/api/v1/data/historical/', 'hours').schema.maximum, undefined, 'clamped, not refused');
  });

  it('takes a page or an id of any length: past the last page, or beyond any record, is a 404', async () => {
    for (const target of ['/api/v1/notes/?page=1234567890', '/api/v1/publications/?page=99999999999999999999999', '/api/v1/publications/9999999999/', '/publications/12345678901234567890/cite.ris']) {
      const { status, body } = await env().getJson(target);
      assert.equal(status, 404, target);
      assert.equal(body.type, 'urn:envmon:problem:not-found', target);
    }
    for (const target of ['/api/v1/notes/?page=0', '/api/v1/publications/0/', '/api/v1/publications/-3/', '/api/v1/notes/?page=1.5']) {
      assert.equal((await env().getJson(target)).status, 400, target);
    }
    assert.equal((await env().getJson('/api/v1/publications/0005/')).body.id, 5, 'leading zeros are the same number');
  });

  it(`answers generated valid and invalid requests as it documents them (${runs} of each per operation, CONFORMANCE_SEED=${seed})`, async function () {
    this.timeout(300_000);
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats(ajv);
    ajv.addSchema({ $id: 'openapi', components: document.components });
    const validatorFor = (schema: Schema) =>
      ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/')) as object);

    const resolve = (schema: Schema): Schema =>
      schema.$ref ? resolve(document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]!) : schema;

    // Values that exist, so that valid requests also reach found records and not only 404s.
    const known: Record<string, string[]> = {
      station: ['oa-01', 'oa-02'], station_id: ['oa-01', 'oa-02'], stations: ['oa-01', 'oa-01,oa-02', 'oa-02, oa-01'],
      slug: ['snowmelt-soil-moisture', 'alpine-observatory', 'new-firmware-2-4'], id: ['1', '2', '5'],
      file: ['swagger-ui.css', 'docs.js', 'swagger-ui-bundle.js'], q: ['soil', 'air quality', '"soil moisture" -snow'],
    };

    /** A value the schema accepts. */
    const valid = (raw: Schema, name = ''): fc.Arbitrary<unknown> => {
      const schema = resolve(raw);
      if (schema.anyOf ?? schema.oneOf) return fc.oneof(...(schema.anyOf ?? schema.oneOf)!.map((s) => valid(s, name)));
      if (schema.enum) return fc.constantFrom(...schema.enum);
      const types = typesOf(schema);
      const nonNull = types.filter((t) => t !== 'null');
      const arb = (() => {
        switch (nonNull[0]) {
          case 'integer':
            return fc.integer({ min: schema.minimum ?? -100_000, max: schema.maximum ?? 10_000_000 });
          case 'number':
            return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
          case 'boolean':
            return fc.boolean();
          case 'array':
            return fc.array(valid(schema.items ?? {}, name), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, 4) });
          case 'object': {
            const properties = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, s]) => [k, valid(s, k)]));
            return fc.record(properties, { requiredKeys: schema.required ?? [] });
          }
          case 'string':
          default:
            if (schema.format === 'date') return fc.date({ min: new Date('2000-01-01'), max: new Date('2030-12-31'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
            if (schema.format === 'date-time') return fc.date({ min: new Date('2000-01-01'), max: new Date(Date.now() - 3_600_000), noInvalidDate: true }).map((d) => d.toISOString());
            if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= (schema.minLength ?? 0) && s.length <= (schema.maxLength ?? 200));
            return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) });
        }
      })();
      const withKnown = known[name] ? fc.oneof(fc.constantFrom(...known[name]), arb) : arb;
      return types.includes('null') ? fc.option(withKnown, { nil: null }) : withKnown;
    };

    /** A value the schema refuses, when there is one that can travel in a query string. */
    const invalid = (raw: Schema): string | undefined => {
      const schema = resolve(raw);
      if (schema.enum) return 'not-one-of-them';
      if (typesOf(schema).includes('integer')) return schema.minimum !== undefined ? String(schema.minimum - 1) : 'twelve';
      if (typesOf(schema).includes('number')) return schema.maximum !== undefined ? String(schema.maximum + 1) : 'twelve';
      if (schema.format === 'date') return '2026-02-30';
      if (schema.pattern) return ['!', ' ', '%', 'a,,b'].find((v) => !new RegExp(schema.pattern!).test(v));
      return undefined;
    };

    const toText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

    const send = async (route: string, method: string, op: Operation, values: Record<string, unknown>, body?: unknown) => {
      let target = route;
      const query = new URLSearchParams();
      for (const p of op.parameters ?? []) {
        if (!(p.name in values)) continue;
        if (p.in === 'path') target = target.replace(`{${p.name}}`, encodeURIComponent(toText(values[p.name])));
        else query.set(p.name, toText(values[p.name]));
      }
      const qs = query.toString();
      const response = await env().get(`${target}${qs ? `?${qs}` : ''}`, {
        method: method.toUpperCase(),
        redirect: 'manual',
        headers: { ...(op.security ? { Authorization: `Token ${key}` } : {}), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
      // A live stream never ends: its answer is read up to its first event, then let go.
      const text = type === 'text/event-stream' ? await firstEvent(response) : await response.text();
      return { url: `${method.toUpperCase()} ${target}${qs ? `?${qs}` : ''}`, status: response.status, type, text };
    };

    /** The answer as documented: a declared status, a declared content type, a body its schema accepts. */
    const conforms = (op: Operation, answer: Awaited<ReturnType<typeof send>>) => {
      const what = `${answer.url} -> ${answer.status} ${answer.type} ${answer.text.slice(0, 300)}`;
      assert.ok(answer.status < 500, `no 5xx: ${what}`);
      const declared = op.responses[String(answer.status)];
      assert.ok(declared, `status ${answer.status} is not documented: ${what}`);
      const types = Object.keys(declared.content ?? {});
      if (types.length === 0) return;
      assert.ok(types.includes(answer.type), `content type ${answer.type} is not documented (${types.join(', ')}): ${what}`);
      if (/json$/.test(answer.type)) {
        const validate = validatorFor(declared.content![answer.type]!.schema);
        assert.ok(validate(JSON.parse(answer.text)), `body does not match its schema: ${ajv.errorsText(validate.errors)}: ${what}`);
      }
    };

    const tally: Record<string, Record<number, number>> = {};
    for (const [route, methods] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        const params = op.parameters ?? [];
        const record = fc.record(Object.fromEntries(params.map((p) => [p.name, valid(p.schema, p.name)])), {
          requiredKeys: params.filter((p) => p.required).map((p) => p.name),
        });
        const bodySchema = op.requestBody?.content['application/json']?.schema;
        // A body names things that exist: the key's station, or a readings URL of a station with readings.
        const bodies = op.operationId === 'createSnapshot'
          ? fc.constantFrom(...snapshotUrls).map((url) => ({ url }))
          : bodySchema
            ? valid(bodySchema).map((body) => ({ ...(body as object), station_id: 'oa-01' }))
            : fc.constant(undefined);
        const count = (status: number) => ((tally[op.operationId] ??= {})[status] = (tally[op.operationId]![status] ?? 0) + 1);

        await fc.assert(
          fc.asyncProperty(record, bodies, async (values, body) => {
            // The rules across parameters a schema cannot say, which the descriptions do: a download names
            // station or stations, not both; a range does not end before it starts.
            if (op.operationId === 'downloadReadings' && ('station' in values) === ('stations' in values)) {
              if ('stations' in values) delete values.station;
              else values.station = 'oa-01';
            }
            if (typeof values.from_date === 'string' && typeof values.to_date === 'string' && values.from_date > values.to_date) {
              [values.from_date, values.to_date] = [values.to_date, values.from_date];
            }
            const answer = await send(route, method, op, values, body);
            count(answer.status);
            conforms(op, answer);
            assert.ok(answer.status !== 400, `a valid request was refused: ${answer.url} ${answer.text.slice(0, 300)}`);
          }),
          { numRuns: runs, seed },
        );

        if (op.operationId === 'createSnapshot') {
          // A URL that is no readings URL, or whose parameters are wrong, or no URL: a documented 4xx.
          const wrongBodies = fc.constantFrom({}, { url: '' }, { url: '/api/v1/stations/' }, { url: '/api/v1/data/download/?station=oa-01&from_date=2025-02-30' },
            { url: '/api/v1/data/aggregate/?station=oa-01&period=year' }, [{ url: snapshotUrls[0] }]);
          await fc.assert(
            fc.asyncProperty(wrongBodies, async (body) => {
              const answer = await send(route, method, op, {}, body);
              count(answer.status);
              conforms(op, answer);
              assert.ok(answer.status === 400, `a wrong snapshot request was not refused: ${JSON.stringify(body)} -> ${answer.status}`);
            }),
            { numRuns: Math.ceil(runs / 2), seed },
          );
        } else if (bodySchema) {
          // A body made wrong, or no key: a documented 4xx, and nothing stored.
          const breakBody = fc.constantFrom('no readings', 'empty readings', 'bad station_id', 'not an object', 'no key');
          await fc.assert(
            fc.asyncProperty(bodies, breakBody, async (body, how) => {
              const wrong = { ...(body as Record<string, unknown>) };
              if (how === 'no readings') delete wrong.readings;
              if (how === 'empty readings') wrong.readings = [];
              if (how === 'bad station_id') wrong.station_id = 'not a station!';
              const sent = how === 'not an object' ? [wrong] : wrong;
              const answer = await send(route, method, how === 'no key' ? { ...op, security: undefined } : op, {}, sent);
              count(answer.status);
              conforms(op, answer);
              assert.ok(answer.status >= 400 && answer.status < 500, `an invalid batch was not refused: ${how} -> ${answer.status}`);
            }),
            { numRuns: Math.ceil(runs / 2), seed },
          );
        }

        // One parameter made wrong, or a required one left out: a documented 4xx, never a success.
        const breakable = params.filter((p) => p.required || invalid(p.schema) !== undefined);
        if (breakable.length === 0) continue;
        await fc.assert(
          fc.asyncProperty(record, bodies, fc.constantFrom(...breakable), async (values, body, broken) => {
            if (op.operationId === 'downloadReadings' && !('station' in values) && !('stations' in values)) values.station = 'oa-01';
            const wrong = invalid(broken.schema);
            if (broken.required && (wrong === undefined || broken.in === 'query')) delete values[broken.name];
            if (wrong !== undefined && !(broken.required && broken.in === 'query' && !(broken.name in values))) values[broken.name] = wrong;
            const answer = await send(route, method, op, values, body);
            count(answer.status);
            conforms(op, answer);
            assert.ok(answer.status >= 400 && answer.status < 500, `an invalid request was not refused: ${answer.url} -> ${answer.status}`);
          }),
          { numRuns: Math.ceil(runs / 2), seed },
        );
      }
    }
    console.log(`      statuses per operation: ${Object.entries(tally).map(([op, s]) => `${op} ${Object.entries(s).map(([k, n]) => `${k}x${n}`).join('/')}`).join(', ')}`);
  });
});
