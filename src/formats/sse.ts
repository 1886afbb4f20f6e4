/**
 * One Server-Sent Event (the WHATWG HTML standard's text/event-stream): its name, its id when it has one,
 * and its data as one line of JSON (JSON.stringify never writes a line break), ended by a blank line.
 */
export const sseEvent = (name: string, id: string | null, data: unknown): string =>
  `event: ${name}\n${id === null ? '' : `id: ${id}\n`}data: ${JSON.stringify(data)}\n\n`;
