import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { testServer } from '../helpers/server.js';

// Run in a child process: an unheard 'error' event ends the process that emits it.
const script = (url: string, adminUrl: string) => `
  import pg from 'pg';
  import './src/db/pool.ts';
  const client = new pg.Client({ connectionString: ${JSON.stringify(url)} });
  await client.connect();
  const admin = new pg.Client({ connectionString: ${JSON.stringify(adminUrl)} });
  await admin.connect();
  await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'envmon-client-errors'");
  await new Promise((resolve) => setTimeout(resolve, 500));
  await admin.end();
  console.log('still running');
`;

describe('pg clients created anywhere in the process', () => {
  it('keep the process up when the server ends their connection (slonik opens one without a listener)', async function () {
    this.timeout(30_000);
    const url = new URL(testServer().adminUrl);
    url.searchParams.set('application_name', 'envmon-client-errors');
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script(url.toString(), testServer().adminUrl)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, out);
    assert.match(out, /still running/);
  });
});
