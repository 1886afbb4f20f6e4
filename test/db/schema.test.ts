import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describeEngines } from '../helpers/app.js';
import { schemaFile } from '../helpers/schemaFile.js';
import { schemaText } from '../helpers/schemaText.js';

describeEngines('the schema a fresh migration gives', (env) => {
  it('is the committed sql/schema.<engine>.sql, so that a reviewer reads the whole schema in one file', async () => {
    const actual = await schemaText(env().databaseUrl);
    const committed = readFileSync(schemaFile(env().engine), 'utf8');
    if (actual !== committed) {
      const a = actual.split('\n');
      const c = committed.split('\n');
      const line = a.findIndex((text, i) => text !== c[i]);
      assert.fail(`sql/schema.${env().engine}.sql differs from a fresh migration from line ${line + 1}:\n  committed: ${c[line]}\n  migrated:  ${a[line]}\n` +
        'run `npm run schema` and commit what it writes with the migration or function it follows');
    }
  });
});
