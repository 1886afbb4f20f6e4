import net from 'node:net';

/** One address in front of several instances, as a load balancer is: each connection to the next in turn. */
export type Proxy = { url: string; connections: number[]; close: () => Promise<void> };

/** A round-robin TCP proxy on a free port of 127.0.0.1 to the `targets` (http://host:port). */
export async function startProxy(targets: string[]): Promise<Proxy> {
  const backends = targets.map((t) => new URL(t));
  const connections = backends.map(() => 0);
  const open = new Set<net.Socket>();
  let turn = 0;
  const server = net.createServer((client) => {
    const index = turn++ % backends.length;
    connections[index]!++;
    const backend = net.connect(Number(backends[index]!.port), backends[index]!.hostname);
    for (const socket of [client, backend]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      // Either side gone: the other goes too, as a proxy's connection does.
      socket.on('error', () => {
        client.destroy();
        backend.destroy();
      });
    }
    client.pipe(backend).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    connections,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
