import type { TestEnv } from './app.js';
import { issueKey } from '../../src/stations/keys.js';
import { addStation } from './readings.js';

/** A station with a fresh key, ready to post. */
export async function stationWithKey(env: TestEnv, stationId: string): Promise<string> {
  await addStation(env.db, stationId);
  return (await issueKey(env.db.pool, stationId)).key;
}

export async function postBatch(
  env: TestEnv,
  key: string | null,
  body: unknown,
  headers: Record<string, string> = {},
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await env.get('/api/v1/ingest/environmental/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(key ? { Authorization: `Token ${key}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}
