// `npm run schema`: writes sql/schema.<engine>.sql, the schema a fresh migration gives on each engine the
// database server offers (TEST_DATABASE_URL, as for the tests). Run it after changing a migration or a
// function file, and commit what it writes beside the change.
import { writeFileSync } from 'node:fs';
import { startTestServer } from './database.js';
import { schemaFile } from './schemaFile.js';
import { schemaText } from './schemaText.js';

const server = await startTestServer(process.env);
try {
  for (const engine of server.engines) {
    const url = await server.createDatabase(engine);
    writeFileSync(schemaFile(engine), await schemaText(url));
    console.log(`wrote ${schemaFile(engine)}`);
  }
  if (server.leftOut.length > 0) console.log(`left out: ${server.leftOut.join('; ')}`);
} finally {
  await server.close();
}
