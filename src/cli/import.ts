import { readFile } from 'node:fs/promises';
import type { Db } from '../db/pool.js';
import { ContentImportError, importContent, parseContentFile } from '../content/importContent.js';
import { parseCommandArgs } from './args.js';
import { StartupError } from '../db/open.js';

/** `envmon import FILE.json`: all or nothing; a bad file names the JSON path of each error. */
export async function importCommand(db: Db, args: string[], out: (line: string) => void): Promise<void> {
  const { positionals } = parseCommandArgs(args, {}, ['FILE.json']);
  const path = positionals[0]!;
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : String(code ?? error);
    throw new StartupError(`cannot read the content file ${path}: ${why}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new ContentImportError([`(file): not valid JSON: ${(error as Error).message}`]);
  }
  const counts = await importContent(db.pool, parseContentFile(json));
  out(`imported ${path}: ${Object.entries(counts).map(([kind, c]) => `${kind} ${c.created} created, ${c.updated} updated`).join('; ')}`);
}
