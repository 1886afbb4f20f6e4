import type { TestServer } from './database.js';

/** The server prepared by preload.ts. */
export function testServer(): TestServer {
  const server = (globalThis as { envmonTestServer?: TestServer }).envmonTestServer;
  if (!server) throw new Error('the test server is not prepared: run the tests with `npm test`');
  return server;
}
