import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { storeReadings } from '../../src/readings/ingest/store.js';
import { describeEngines } from '../helpers/app.js';
import { addStation, makeReadings } from '../helpers/readings.js';

// The client snippets of the README and docs/, run as a reader would run them (curl in a shell, pandas,
// R) against a running service: a snippet that stops working fails here, not in a user's hands.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const documented = 'http://127.0.0.1:8000';

type Snippet = { file: string; language: 'sh' | 'python' | 'r'; code: string };

/** Every fenced block in sh, python or r that talks to the service, but the set-up commands (make), which CI runs itself. */
function snippets(): Snippet[] {
  const files = ['README.md', ...readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  return files.flatMap((file) => [...readFileSync(path.join(root, file), 'utf8').matchAll(/^```(sh|python|r)\n([\s\S]*?)^```$/gm)]
    .map((m) => ({ file, language: m[1] as Snippet['language'], code: m[2]! }))
    .filter((s) => s.code.includes(documented) && !/^make /m.test(s.code)));
}

// Debian's clients, which `make test` installs (python3-pandas, r-base-core, curl).
const runners: Record<Snippet['language'], { command: string; args: (code: string) => string[] }> = {
  sh: { command: '/bin/bash', args: (code) => ['-e', '-c', code] },
  python: { command: '/usr/bin/python3', args: (code) => ['-c', code] },
  r: { command: '/usr/bin/Rscript', args: (code) => ['-e', code] },
};

function run(snippet: Snippet, origin: string, env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  const runner = runners[snippet.language];
  if (!existsSync(runner.command)) throw new Error(`${runner.command} is missing: make test installs Debian's python3-pandas and r-base-core`);
  return new Promise((resolve) => {
    execFile(runner.command, runner.args(snippet.code.replaceAll(documented, origin)), { cwd: root, env: { ...process.env, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr }));
  });
}

describeEngines('the documentation\'s client snippets', (env) => {
  it('run as written against the service, with curl, pandas and R', async function () {
    this.timeout(300_000);
    const found = snippets();
    assert.deepEqual([...new Set(found.map((s) => s.language))].sort(), ['python', 'r', 'sh']);
    // The demo station the snippets name, with three days of readings in the range they ask for.
    await addStation(env().db, 'alpine-01');
    await storeReadings(env().db, 'alpine-01', makeReadings(3 * 1440, '2026-03-01T00:00:00Z', 1, 7));
    for (const snippet of found) {
      const result = await run(snippet, env().origin, { DATABASE_URL: env().databaseUrl, LOG_LEVEL: 'silent' });
      const where = `${snippet.file}, ${snippet.language}:\n${snippet.code}\nstdout: ${result.stdout.slice(0, 2000)}\nstderr: ${result.stderr.slice(0, 2000)}`;
      assert.equal(result.code, 0, where);
      // Each prints what it read: the posted reading's answer, or the readings' columns.
      assert.match(result.stdout, /"accepted":1|temperature_c/, where);
      assert.doesNotMatch(result.stdout, /"status":\s*[45]\d\d|problem\+json/, where);
    }
  });
});
