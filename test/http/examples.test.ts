import assert from 'node:assert/strict';
import { loadDemo } from '../../src/cli/demo.js';
import { describeEngines } from '../helpers/app.js';

type Parameter = { name: string; in: string; required?: boolean; example?: unknown; schema?: { example?: unknown } };
type Operation = { operationId: string; parameters?: Parameter[] };

// What a person gets from the docs page's "Try it out" without typing anything: every example value of the
// document, sent as it stands, against the demo data, answers 2xx.
describeEngines('the OpenAPI document\'s examples', (env) => {
  it('are requests that succeed on the demo data', async function () {
    this.timeout(180_000);
    await loadDemo(env().db);
    const document = (await env().getJson('/api/v1/openapi.json')).body as { paths: Record<string, Record<string, Operation>> };
    const tried: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      const operation = operations.get;
      if (!operation) continue;
      const parameters = operation.parameters ?? [];
      const exampleOf = (p: Parameter) => p.example ?? p.schema?.example;
      // An operation whose required parameters have no example is not runnable from the page as it stands.
      if (parameters.some((p) => p.required && exampleOf(p) === undefined)) continue;
      let url = path;
      const query = new URLSearchParams();
      for (const p of parameters) {
        const example = exampleOf(p);
        if (example === undefined) continue;
        if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(example)));
        else if (p.in === 'query') query.set(p.name, String(example));
      }
      const target = `${url}${query.size ? `?${query}` : ''}`;
      const controller = new AbortController();
      const response = await env().get(target, { signal: controller.signal });
      // The live stream never ends: its status and headers say enough.
      if (path.includes('/stream/')) controller.abort();
      else await response.arrayBuffer();
      assert.ok(response.status >= 200 && response.status < 300, `${operation.operationId}: GET ${target} answered ${response.status}`);
      tried.push(operation.operationId);
    }
    for (const id of ['latestReading', 'historicalReadings', 'aggregateReadings', 'compareStations', 'downloadReadings', 'streamReadings']) {
      assert.ok(tried.includes(id), `${id} is runnable from its examples (tried: ${tried.join(', ')})`);
    }
  });
});
