import type { Context } from 'koa';
import type { CommonQueryMethods } from 'slonik';
import { forbidden, unauthorized } from '../http/problem.js';
import { findStationByKey } from './keys.js';

const tokenHeader = /^Token\s+(\S+)\s*$/i;

/**
 * The station whose key the request carries in `Authorization: Token <key>`.
 * Throws 401 (with WWW-Authenticate: Token) when no token is given, 403 when it matches no live key.
 */
export async function authenticateStation(ctx: Context, db: CommonQueryMethods): Promise<string> {
  const header = ctx.get('Authorization');
  if (!header) throw unauthorized('this route needs a station API key: send Authorization: Token <key>');
  const match = tokenHeader.exec(header);
  if (!match) throw unauthorized('the Authorization header must be "Token " followed by the key that `envmon keys issue` printed, with nothing around it');
  const station = await findStationByKey(db, match[1]!);
  if (!station) throw forbidden('the API key is not valid: it is unknown or has been revoked');
  return station;
}
