/**
 * Errors of the control API, in one shape: RFC 9457 problem details (`application/problem+json`) with `type`,
 * `title`, `status` and `detail`, and `errors` (where and what) for a request that did not validate.
 *
 * `type` is `about:blank` when the status says it all (401, 404, 405, 429, 503: the title is then the status's
 * phrase, as RFC 9457 asks); a problem of ours has a tag URI `tag:collections-sync,2026:problem/<slug>`, a name
 * that is never dereferenced (RFC 9457 3.1.1 allows such URIs): docs/api.md lists every slug.
 */
import { STATUS_CODES } from 'node:http';

export const PROBLEM_TYPE = 'application/problem+json';
const TAG = 'tag:collections-sync,2026:problem/';

/** Our problems by slug: the status each is answered with, and its title. */
export const PROBLEMS = {
  'invalid-request': { status: 422, title: 'The request did not validate' },
  'invalid-query': { status: 400, title: 'The query or path did not validate' },
  'malformed-body': { status: 400, title: 'The body is not JSON' },
  'unsupported-media-type': { status: 415, title: 'The body must be JSON' },
  'body-too-large': { status: 413, title: 'The body is too large' },
  'idempotency-key-reused': { status: 422, title: 'The Idempotency-Key was used for another request' },
  'idempotency-key-in-flight': { status: 409, title: 'A request with this Idempotency-Key is under way' },
  'invalid-idempotency-key': { status: 400, title: 'The Idempotency-Key header is not valid' },
  'not-connectable': { status: 409, title: 'The tenant is not connected with a link' },
  'already-connected': { status: 409, title: 'The tenant already has a connection' },
  'no-such-link': { status: 404, title: 'No such outstanding connect link' },
  'connect-links-off': { status: 501, title: 'Connect links are off' },
  'key-limited': { status: 403, title: 'This API key is limited to some tenants' },
  'tenant-exists': { status: 409, title: 'A tenant of this id exists' },
  'tenant-from-file': { status: 409, title: 'The tenant is of the tenants file' },
  'tenant-changed': { status: 412, title: 'The tenant changed since it was read' },
  'tenants-need-token-key': { status: 501, title: 'Tenants cannot be created without PLATFORM_TOKEN_KEY' },
  'no-receiver': { status: 409, title: 'The tenant has no run-webhook receiver' },
  'revoke-needs-token-key': { status: 501, title: 'A connection cannot be revoked without PLATFORM_TOKEN_KEY' },
} as const;
export type ProblemSlug = keyof typeof PROBLEMS;

/** Every `type` a problem of this API has: the document lists them as an enum. */
export const PROBLEM_TYPES = ['about:blank', ...(Object.keys(PROBLEMS) as ProblemSlug[]).map((slug) => `${TAG}${slug}` as const)] as const;

export interface FieldError {
  /** Where: body, query, path or header. */
  in: string;
  /** The zod issue's path within it. */
  path: (string | number)[];
  message: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldError[];
}

/** A problem of ours (a tag URI type). */
export function ours(slug: ProblemSlug, detail: string, errors?: FieldError[]): Problem {
  const p = PROBLEMS[slug];
  return { type: `${TAG}${slug}`, title: p.title, status: p.status, detail, ...(errors ? { errors } : {}) };
}

/** A problem the status says all about (`about:blank`, the status phrase as title). */
export function plain(status: 401 | 404 | 405 | 429 | 503, detail: string): Problem {
  return { type: 'about:blank', title: STATUS_CODES[status] ?? 'Error', status, detail };
}

export function problemResponse(p: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(p), { status: p.status, headers: { 'content-type': PROBLEM_TYPE, 'cache-control': 'no-store', ...headers } });
}
