// Loaded with `node --import` before mocha starts (see .mocharc.json), because preparing the database
// server is asynchronous and every test file must know, while it defines its suites, which engines run.
import { startTestServer } from './database.js';

const server = await startTestServer(process.env);
(globalThis as { envmonTestServer?: unknown }).envmonTestServer = server;

console.log(
  `engines: ${server.engines.join(', ')}` + (server.leftOut.length > 0 ? ` (left out: ${server.leftOut.join('; ')})` : ''),
);
