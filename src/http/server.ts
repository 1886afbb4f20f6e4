import http from 'node:http';
import type Koa from 'koa';
import { answerRefusals } from './refusals.js';

export type RunningServer = { server: http.Server; url: string; close: () => Promise<void> };

/**
 * Listens with timeouts that keep slow clients from holding sockets. `close` stops accepting,
 * lets in-flight requests finish, and closes idle keep-alive sockets at once.
 */
/** The address cannot be listened on: one line for the operator. */
export class PortInUseError extends Error {}

export async function listen(app: Koa, port: number, host: string, timeouts: { headersMs?: number } = {}): Promise<RunningServer> {
  // Node enforces the header and request timeouts when it checks its connections, every 30 s by default:
  // check every second so that a slow client is cut close to its deadline.
  const server = http.createServer({ connectionsCheckingInterval: 1_000 }, app.callback());
  server.headersTimeout = timeouts.headersMs ?? 15_000;
  server.requestTimeout = 120_000;
  server.keepAliveTimeout = 5_000;
  answerRefusals(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: Error & { code?: string }) => reject(
      error.code === 'EADDRINUSE' ? new PortInUseError(`port ${port} on ${host} is in use (another envmon serving?); stop it or set PORT`)
        : error.code === 'EACCES' ? new PortInUseError(`port ${port} on ${host} is not open to this user; set PORT above 1023`)
          : error,
    ));
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // While draining, each answer closes its connection: a client sending request after request on a
  // keep-alive socket would otherwise hold the drain open forever.
  let closing = false;
  server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
    if (closing && !res.headersSent) res.setHeader('Connection', 'close');
  });
  const address = server.address();
  const actualPort = typeof address === 'object' && address ? address.port : port;
  return {
    server,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`,
    close: () =>
      new Promise<void>((resolve) => {
        closing = true;
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
