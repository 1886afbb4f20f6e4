/** One wrong parameter, as listed in a 400 problem's `errors`. */
export type ParamError = { param: string; message: string };

/**
 * The one error type a client can see. The error middleware writes it as RFC 9457 problem details;
 * `code` is stable and becomes the problem `type` (`urn:envmon:problem:<code>`).
 */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    readonly detail: string,
    readonly extra: { errors?: ParamError[]; [key: string]: unknown } = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'Problem';
  }

  body(): Record<string, unknown> {
    return { type: `urn:envmon:problem:${this.code}`, title: this.title, status: this.status, detail: this.detail, ...this.extra };
  }
}

export const badRequest = (detail: string, errors?: ParamError[]) =>
  new Problem(400, 'bad-request', 'Bad Request', detail, errors ? { errors } : {});

export const invalidParameters = (errors: ParamError[]) =>
  new Problem(
    400,
    'invalid-parameters',
    'Invalid parameters',
    errors.map((e) => `${e.param} ${e.message}`).join('; '),
    { errors },
  );

export const notFound = (detail: string) => new Problem(404, 'not-found', 'Not Found', detail);

export const methodNotAllowed = (method: string, path: string, allowed: string[]) =>
  new Problem(405, 'method-not-allowed', 'Method Not Allowed', `${method} is not allowed on ${path}; use ${allowed.join(', ')}`, {}, {
    Allow: allowed.join(', '),
  });

export const unauthorized = (detail: string) =>
  new Problem(401, 'unauthorized', 'Unauthorized', detail, {}, { 'WWW-Authenticate': 'Token' });

export const forbidden = (detail: string) => new Problem(403, 'forbidden', 'Forbidden', detail);

export const requestTimeout = (detail: string) => new Problem(408, 'request-timeout', 'Request Timeout', detail);

export const payloadTooLarge = (detail: string) => new Problem(413, 'payload-too-large', 'Payload Too Large', detail);

export const unsupportedMediaType = (detail: string) =>
  new Problem(415, 'unsupported-media-type', 'Unsupported Media Type', detail);

export const tooManyRequests = (detail: string, retryAfterSeconds: number) =>
  new Problem(429, 'too-many-requests', 'Too Many Requests', detail, {}, { 'Retry-After': String(retryAfterSeconds) });

export const serviceUnavailable = (detail: string, extra: Record<string, unknown> = {}, retryAfterSeconds = 5) =>
  new Problem(503, 'service-unavailable', 'Service Unavailable', detail, extra, { 'Retry-After': String(retryAfterSeconds) });

export const internalError = (requestId: string) =>
  new Problem(500, 'internal-error', 'Internal Server Error', `the server failed to answer; quote request id ${requestId} when reporting it`, {
    request_id: requestId,
  });
