/**
 * `Request-Id` on every answer of the public server (decision 0230): the caller's own id when it sent a sane one in
 * `Request-Id` (or `X-Request-Id`), else one made here (`req_` and 16 random base64url characters). It is echoed on
 * the answer, 401 and 404 included, and logged on the request's line, so a caller's report and our logs meet.
 */
import { randomBytes } from 'node:crypto';

/** A caller's id we take as it is: 1-128 characters of a set that cannot break a log line or a header. */
export const SANE_REQUEST_ID = /^[A-Za-z0-9._~:@+=/-]{1,128}$/;

/** The ids given, by request: the server's middleware and the API's log line read the same one. */
const given = new WeakMap<Request, string>();

/** The request's id: the caller's `Request-Id`, else its `X-Request-Id`, when sane; else a new `req_…` (kept for this request). */
export function requestIdOf(req: Request): string {
  let id = given.get(req);
  if (id === undefined) {
    const sent = [req.headers.get('request-id'), req.headers.get('x-request-id')].map((h) => h?.trim()).find((h) => h !== undefined && SANE_REQUEST_ID.test(h));
    id = sent ?? `req_${randomBytes(12).toString('base64url')}`;
    given.set(req, id);
  }
  return id;
}
