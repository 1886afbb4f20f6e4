import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lintFromString, loadConfig } from '@redocly/openapi-core';
import { describeEngines } from '../helpers/app.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// What a client developer's linter says of the document: Redocly's recommended rules, with the one
// exception redocly.yaml declares and explains.
describeEngines('the OpenAPI document under Redocly\'s recommended rules', (env) => {
  it('has no error', async () => {
    const response = await env().get('/api/v1/openapi.json');
    const source = await response.text();
    const config = await loadConfig({ configPath: path.join(root, 'redocly.yaml') });
    const problems = await lintFromString({ source, absoluteRef: `${env().origin}/api/v1/openapi.json`, config });
    const errors = problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`);
    assert.deepEqual(errors, []);
  });
});
