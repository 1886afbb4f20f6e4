import pg from 'pg';

/**
 * Every `pg` client this process creates listens for 'error' from the moment it connects. A client
 * whose connection the server ends (a restart, a failover, pg_terminate_backend) emits 'error'; with no
 * listener that event ends the process. Our pools attach listeners, but slonik opens a short-lived client
 * of its own when it creates a pool (to look up type parsers) without one, and a pool created while
 * backends are being terminated took the process down with it. The error still reaches whoever waits on
 * the connection (a query, a connect): this only keeps the event from being unheard.
 */
const connect = pg.Client.prototype.connect;
const heard = () => {};
pg.Client.prototype.connect = function (this: pg.Client, ...args: unknown[]) {
  if (this.listenerCount('error') === 0) this.on('error', heard);
  return (connect as (...a: unknown[]) => unknown).apply(this, args);
} as typeof connect;
