import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * What Node's HTTP parser refuses before the application sees a request (headers too large, a malformed
 * request line or header, a request that took too long to arrive) gets a small problem document as every
 * other refusal does, with CORS, the security headers and a request id, and the connection closed. A
 * CONNECT request, which no route takes, is refused with a 405 the same way rather than dropped.
 */
export function answerRefusals(server: http.Server): void {
  server.on('clientError', (error: Error & { code?: string }, socket: Duplex) => {
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const detail = status === 431 ? 'the request headers are larger than this server accepts'
      : status === 408 ? 'the request did not arrive in time'
      : 'the request is not well-formed HTTP/1.1';
    refuse(socket, status, detail);
  });
  server.on('connect', (_request: http.IncomingMessage, socket: Duplex) => {
    refuse(socket, 405, 'CONNECT is not a method of this API', 'Allow: GET, HEAD, OPTIONS, POST\r\n');
  });
}

function refuse(socket: Duplex, status: number, detail: string, extraHeaders = ''): void {
  const title = http.STATUS_CODES[status] ?? 'Error';
  const code = title.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  const body = JSON.stringify({ type: `urn:envmon:problem:${code}`, title, status, detail });
  // Ended and then destroyed once written: a client that goes on sending (a header a second) must not
  // hold the half-closed connection.
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\n` +
      'Content-Type: application/problem+json\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Access-Control-Allow-Origin: *\r\n' +
      'X-Content-Type-Options: nosniff\r\n' +
      'Referrer-Policy: no-referrer\r\n' +
      `X-Request-Id: ${randomUUID()}\r\n` +
      extraHeaders +
      'Connection: close\r\n\r\n' +
      body,
    () => socket.destroy(),
  );
}
