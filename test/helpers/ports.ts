import net from 'node:net';

/**
 * A port nothing listens on, below the range the kernel hands out to outgoing connections (32768 and up
 * here), so that no client socket of the other tests takes it between this check and the server's bind,
 * nor while a server on it is stopped and started again.
 */
export async function freePort(): Promise<number> {
  for (let port = 20_000 + (process.pid % 10_000); ; port++) {
    const free = await new Promise<boolean>((resolve) => {
      const probe = net.createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}
