/**
 * From an HTTP answer to a value or a CollectionsError: statuses to error classes, bodies through the
 * contract's response schemas.
 */
import { z } from 'zod';
import {
  AmbiguousError,
  AuthError,
  BadResponseError,
  CollectionsError,
  NotFoundError,
  parseRetryAfter,
  RateLimitedError,
  TransientError,
  ValidationError,
} from './errors.js';
import { fastCheckOf } from '../zod-fast-check.js';
import type { HttpResponse } from './http.js';
import { validationErrorSchema } from './schemas.js';
import type { AuthRejectReason } from './token-provider.js';

const authBodySchema = z.looseObject({ reason: z.enum(['missing', 'expired', 'superseded', 'invalid']).optional() });

function json(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The reason of a 401 body; an unreadable or unknown reason counts as `invalid`. */
export function authReason(text: string): AuthRejectReason {
  const parsed = authBodySchema.safeParse(json(text));
  return parsed.success ? (parsed.data.reason ?? 'invalid') : 'invalid';
}

/**
 * The error for a non-2xx answer. 502/503/504 are answered before any processing. Another 5xx (500) on a
 * non-idempotent operation may come from a failure halfway through the write, so it is ambiguous there;
 * on idempotent operations every 5xx is transient.
 */
export function errorFromResponse(route: string, res: HttpResponse, idempotent: boolean, nowMs = Date.now()): CollectionsError {
  const { status, text: body } = res;
  if (status === 401) return new AuthError({ route, reason: authReason(body), body });
  if (status === 404) return new NotFoundError({ route, body });
  if (status === 422) {
    const parsed = validationErrorSchema.safeParse(json(body));
    return new ValidationError({ route, detail: parsed.success ? parsed.data.detail : [], local: false, status, body });
  }
  if (status === 429) return new RateLimitedError({ route, retryAfterMs: parseRetryAfter(res.headers['retry-after'], nowMs), body });
  if (status >= 500) {
    if (idempotent || status === 502 || status === 503 || status === 504) {
      return new TransientError({ route, message: `service answered ${status}`, status, body });
    }
    return new AmbiguousError({ route, message: `service answered ${status}`, idempotent, status, body });
  }
  return new CollectionsError({ code: 'COLLECTIONS_HTTP', retryable: false, message: `${route}: unexpected status ${status}`, route, status, body });
}

/**
 * A 2xx body through `schema`; a body that is not JSON or does not match is a BadResponseError. The schema's
 * quick check (src/zod-fast-check.ts) passes the common answer without zod's parse; anything it does not pass is parsed
 * with zod, which gives the value or the issues naming the fields.
 */
export function parseBody<T extends z.ZodType>(route: string, res: HttpResponse, schema: T): z.infer<T> {
  let value: unknown;
  try {
    value = JSON.parse(res.text) as unknown;
  } catch (err) {
    throw new BadResponseError({ route, status: res.status, issues: [{ path: [], message: 'not JSON', code: 'invalid_json' }], body: res.text, cause: err });
  }
  if (fastCheckOf(schema)?.(value) === true) return value as z.infer<T>;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => ({ path: i.path.map((k) => (typeof k === 'number' ? k : String(k))), message: i.message, code: i.code }));
    throw new BadResponseError({ route, status: res.status, issues, body: res.text });
  }
  return parsed.data;
}

/** A 2xx body whose content the description does not show: JSON when it parses, the text otherwise, null when empty. */
export function looseBody(res: HttpResponse): unknown {
  if (res.text.trim() === '') return null;
  const v = json(res.text);
  return v === undefined ? res.text : v;
}
