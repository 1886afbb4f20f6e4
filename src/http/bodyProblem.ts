import { badRequest, payloadTooLarge, Problem, requestTimeout, unsupportedMediaType } from './problem.js';

/**
 * The problem for an error raised while reading or parsing a request body (raw-body's typed errors,
 * the JSON parser's SyntaxError). Anything else passes through unchanged.
 */
export function bodyProblem(error: Error & { type?: string; limit?: number; status?: number; code?: string }): Error {
  if (error instanceof Problem) return error;
  // The decoder (inflation) refuses an encoding other than gzip, deflate, br or identity with a 415.
  if (error.status === 415) {
    return unsupportedMediaType('the request body uses a content encoding this server does not accept: send gzip, deflate, br or none');
  }
  // zlib's and brotli's errors: the body does not decompress with the encoding it names.
  if (typeof error.code === 'string' && /^(Z_|ERR__ERROR)/.test(error.code)) {
    return badRequest('the request body could not be decompressed with the Content-Encoding it names');
  }
  if (error.type === 'entity.too.large' || error.status === 413) {
    return payloadTooLarge(`the request body is larger than ${error.limit ?? 'the'} bytes this server accepts: split the batch`);
  }
  if (error.type === 'encoding.unsupported') return unsupportedMediaType('the request body uses a content encoding this server does not accept');
  if (error.type === 'request.stalled') return requestTimeout('the request body stopped arriving: send it again');
  if (error.type === 'request.aborted' || error.type === 'request.size.invalid') {
    return badRequest('the request body ended before its announced length');
  }
  if (error instanceof SyntaxError) {
    return /prototype/.test(error.message)
      ? badRequest('the request body is not accepted: keys named __proto__ or constructor.prototype are refused')
      : badRequest('the request body is not valid JSON');
  }
  return error;
}
