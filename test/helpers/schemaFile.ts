import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Engine } from '../../src/config.js';

/** Where the committed schema of an engine is. */
export const schemaFile = (engine: Engine) => path.resolve(path.dirname(fileURLToPath(import.meta.url)), `../../sql/schema.${engine}.sql`);
