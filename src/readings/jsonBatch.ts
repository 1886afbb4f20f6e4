import { stationIdSchema } from '../http/params.js';
import { ascii, closeBrace, closeBracket, colon, JsonBytes, openBrace, openBracket } from './jsonBytes.js';

/** A JSON batch found in place: its station, and where each reading's bytes start and end. */
export type ScannedBatch = { json: JsonBytes; stationId: string; starts: number[]; ends: number[] };

const stationKey = ascii('station_id');
const readingsKey = ascii('readings');

/**
 * The envelope `{"station_id": …, "readings": [ … ]}` read in place, every byte of it checked to be
 * JSON. Null whenever the body is anything else or anything unusual (a key given twice, an escaped
 * station, no reading, a station id the schema refuses): the general parser then answers it, with the
 * same result or the error it has always given.
 */
export function scanJsonBatch(bytes: Buffer): ScannedBatch | null {
  const json = new JsonBytes(bytes);
  let i = json.space(0);
  if (bytes[i] !== openBrace) return null;
  let stationId: string | null = null;
  let starts: number[] | null = null;
  const ends: number[] = [];
  i = json.space(i + 1);
  if (bytes[i] === closeBrace) return null;
  for (;;) {
    const keyStart = i;
    i = json.key(i);
    if (i < 0) return null;
    const keyEnd = i - 1;
    i = json.space(i);
    if (bytes[i] !== colon) return null;
    i = json.space(i + 1);
    if (json.equals(keyStart + 1, keyEnd, stationKey)) {
      const end = json.string(i);
      if (stationId !== null || end < 0 || json.escaped || json.nonAscii) return null;
      stationId = bytes.toString('latin1', i + 1, end - 1);
      i = end;
    } else if (json.equals(keyStart + 1, keyEnd, readingsKey)) {
      if (starts !== null || bytes[i] !== openBracket) return null;
      starts = [];
      i = json.space(i + 1);
      if (bytes[i] === closeBracket) return null;
      for (;;) {
        starts.push(i);
        i = json.value(i, 1);
        if (i < 0) return null;
        ends.push(i);
        i = json.next(i, closeBracket);
        if (i < 0) return null;
        if (json.closed) break;
      }
    } else {
      i = json.value(i);
      if (i < 0) return null;
    }
    i = json.next(i, closeBrace);
    if (i < 0) return null;
    if (json.closed) break;
  }
  if (json.space(i) !== bytes.length || stationId === null || starts === null || !stationIdSchema.safeParse(stationId).success) {
    return null;
  }
  return { json, stationId, starts, ends };
}
