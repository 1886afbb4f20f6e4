import pg from 'pg';
import type { Logger } from 'pino';

export type Listener = { close: () => Promise<void> };

export type ListenHandlers = {
  /** A notification's payload, in commit order of the transactions that sent them. */
  notify: (payload: string) => void;
  /**
   * Listening (again): notifications sent while no connection listened are lost, so whatever they
   * announced must be looked up now. Called after every connect, the first included.
   */
  listening: () => void;
};

// After a lost connection, the next attempt waits a little longer each time, up to this.
const maxBackoffMs = 5_000;

/**
 * LISTENs on `channel` on a connection of its own (a pooled one would be handed to other work), and
 * keeps listening: a lost connection (a restart, a failover, a terminated backend) is replaced, and
 * `listening` tells the caller to catch up. Errors never reach the process.
 */
export function createListener(url: string, channel: string, handlers: ListenHandlers, log?: Logger): Listener {
  let client: pg.Client | null = null;
  let closed = false;
  let backoffMs = 100;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    if (closed) return;
    const next = new pg.Client({ connectionString: url, application_name: 'envmon listen' });
    next.on('error', () => {});
    next.on('notification', (message) => {
      if (message.channel === channel && message.payload !== undefined) handlers.notify(message.payload);
    });
    next.once('end', () => {
      if (client !== next) return;
      client = null;
      if (!closed) schedule();
    });
    try {
      await next.connect();
      await next.query(`listen ${pg.Client.prototype.escapeIdentifier(channel)}`);
    } catch (error) {
      log?.warn({ err: error }, 'listening for new readings failed; trying again');
      next.end().catch(() => {});
      schedule();
      return;
    }
    if (closed) {
      await next.end().catch(() => {});
      return;
    }
    client = next;
    backoffMs = 100;
    handlers.listening();
  };
  const schedule = () => {
    clearTimeout(retry);
    retry = setTimeout(() => void connect(), backoffMs);
    retry.unref();
    backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
  };

  void connect();
  return {
    close: async () => {
      closed = true;
      clearTimeout(retry);
      const current = client;
      client = null;
      await current?.end().catch(() => {});
    },
  };
}
