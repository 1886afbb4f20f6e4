import http from 'node:http';

export type SseEvent = { event: string; id: string | undefined; data: string; at: number };

export type SseStream = {
  status: number;
  headers: http.IncomingHttpHeaders;
  events: SseEvent[];
  /** Comment lines received (heartbeats). */
  comments: number;
  /** The first event from index `from` on that `match` accepts, waiting at most `timeoutMs`. */
  next: (match: (event: SseEvent) => boolean, timeoutMs?: number, from?: number) => Promise<SseEvent>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close: () => void;
};

/** An EventSource as a test needs it: every event kept with when it came, parsed as the SSE format says. */
export function openStream(url: string, headers: Record<string, string> = {}): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: { Accept: 'text/event-stream', ...headers } }, (response) => {
      const events: SseEvent[] = [];
      const waiters = new Set<() => void>();
      let buffer = '';
      let comments = 0;
      let ended!: () => void;
      const stream: SseStream = {
        status: response.statusCode!,
        headers: response.headers,
        events,
        get comments() {
          return comments;
        },
        next: (match, timeoutMs = 5_000, from = 0) => new Promise((found, fail) => {
          const look = () => {
            const hit = events.slice(from).find(match);
            if (!hit) return false;
            clearTimeout(timer);
            waiters.delete(wake);
            found(hit);
            return true;
          };
          const wake = () => void look();
          const timer = setTimeout(() => {
            waiters.delete(wake);
            fail(new Error(`no such event within ${timeoutMs} ms; got ${events.map((e) => e.event).join(', ')}`));
          }, timeoutMs);
          if (!look()) waiters.add(wake);
        }),
        ended: new Promise((done) => (ended = done)),
        close: () => request.destroy(),
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments++;
            const colon = line.indexOf(':');
            if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 1).replace(/^ /, '');
          }
          if (fields.data !== undefined) events.push({ event: fields.event ?? 'message', id: fields.id, data: fields.data, at: Date.now() });
        }
        for (const wake of [...waiters]) wake();
      });
      response.on('end', () => ended());
      response.on('close', () => ended());
      resolve(stream);
    });
    request.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
  });
}


/** An event stream's text up to the end of its first event, the stream then cancelled. */
export async function firstEvent(response: Response): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (!/\nevent: [^\n]*\n(?:[^\n]+\n)*\n/.test(`\n${text}`)) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}
