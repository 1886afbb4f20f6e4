import assert from 'node:assert/strict';
import net from 'node:net';
import { describeEngines } from '../helpers/app.js';

/** Sends raw bytes on a new connection and reads until the server closes it: the status line, headers and body. */
function raw(origin: string, bytes: string | Buffer): Promise<{ status: number; headers: Map<string, string>; body: string }> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = new Map(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

describeEngines('requests the HTTP parser refuses', (env) => {
  it('are answered with a problem document, CORS and a request id, never a bare close', async () => {
    const cases: [string, string | Buffer, number][] = [
      ['headers over 16 KB', `GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
      ['raw bytes outside ASCII in the path', Buffer.concat([Buffer.from('GET /api/v1/'), Buffer.from([0xc3, 0xa9]), Buffer.from(' HTTP/1.1\r\nHost: x\r\n\r\n')]), 400],
      ['an unknown method', 'FROBNICATE /api/v1/ HTTP/1.1\r\nHost: x\r\n\r\n', 400],
      ['a CR inside a header value', 'GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-A: b\rc\r\n\r\n', 400],
      ['CONNECT', 'CONNECT example.org:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n', 405],
    ];
    for (const [what, bytes, status] of cases) {
      const answer = await raw(env().origin, bytes);
      assert.equal(answer.status, status, what);
      assert.equal(answer.headers.get('content-type'), 'application/problem+json', what);
      assert.equal(answer.headers.get('access-control-allow-origin'), '*', what);
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff', what);
      assert.match(answer.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, what);
      const problem = JSON.parse(answer.body) as { type: string; status: number; detail: string };
      assert.equal(problem.status, status, what);
      assert.match(problem.type, /^urn:envmon:problem:/, what);
    }
  });
});
