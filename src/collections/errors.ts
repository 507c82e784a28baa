/**
 * The errors of the collections client: one small set with stable codes that say whether to retry.
 * Logs, alerts and the queue wrapper match on `code`; `retryable` is the verdict for the layer above the
 * client (the client has already spent its own retries when it throws). No error holds a token or secret:
 * response bodies are trimmed and scrubbed of anything that looks like a bearer token or JWT.
 */
import type { AuthRejectReason } from './token-provider.js';
import type { ValidationDetail } from './schemas.js';

export type CollectionsErrorCode =
  | 'COLLECTIONS_REJECTED'
  | 'COLLECTIONS_NOT_FOUND'
  | 'AUTH_MISSING'
  | 'AUTH_EXPIRED'
  | 'AUTH_SUPERSEDED'
  | 'AUTH_INVALID'
  | 'AUTH_CREDENTIALS_REJECTED'
  | 'COLLECTIONS_RATE_LIMITED'
  | 'COLLECTIONS_TRANSIENT'
  | 'COLLECTIONS_AMBIGUOUS'
  | 'COLLECTIONS_BAD_RESPONSE'
  | 'COLLECTIONS_HTTP'
  | 'ABORTED';

export interface CollectionsErrorInit {
  code: CollectionsErrorCode;
  message: string;
  retryable: boolean;
  /** 'POST /contact', 'PUT /invoice/payment/{uuid}', ... (the route template, never ids or tokens). */
  route: string;
  status?: number | undefined;
  /** The response body as received; it is trimmed and scrubbed here. */
  body?: string | undefined;
  cause?: unknown;
}

const BODY_LIMIT = 500;
const JWT = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;
const BEARER = /Bearer\s+[^\s"',]+/gi;
const TOKEN_FIELD = /("(?:access_token|accessToken|token|clientSecret|client_secret)"\s*:\s*)"[^"]*"/gi;

/** A response body fit for an error or a log line: at most 500 characters, tokens replaced by [redacted]. */
export function trimBody(body: string | undefined): string | undefined {
  if (body === undefined || body === '') return undefined;
  const scrubbed = body.replace(JWT, '[redacted]').replace(BEARER, 'Bearer [redacted]').replace(TOKEN_FIELD, '$1"[redacted]"');
  return scrubbed.length > BODY_LIMIT ? `${scrubbed.slice(0, BODY_LIMIT)}...` : scrubbed;
}

export class CollectionsError extends Error {
  readonly code: CollectionsErrorCode;
  readonly retryable: boolean;
  readonly route: string;
  readonly status: number | undefined;
  readonly body: string | undefined;

  constructor(init: CollectionsErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'CollectionsError';
    this.code = init.code;
    this.retryable = init.retryable;
    this.route = init.route;
    this.status = init.status;
    this.body = trimBody(init.body);
  }

  /** What a log line or a dead letter may hold (the cause reduced to its name, code and message). */
  toJSON(): Record<string, unknown> {
    const cause = this.cause instanceof Error ? { name: this.cause.name, code: (this.cause as { code?: unknown }).code, message: this.cause.message } : undefined;
    return { name: this.name, code: this.code, message: this.message, retryable: this.retryable, route: this.route, status: this.status, body: this.body, cause };
  }
}

/** 422 from the service, or a request refused locally (`local: true`) because the service would 422 it. */
export class ValidationError extends CollectionsError {
  readonly detail: ValidationDetail[];
  readonly local: boolean;
  constructor(init: { route: string; detail: ValidationDetail[]; local: boolean; status?: number; body?: string }) {
    const where = init.local ? 'refused locally' : 'rejected by the service';
    const first = init.detail[0];
    const what = first ? `: ${first.loc.join('.')} ${first.msg}` : '';
    super({ code: 'COLLECTIONS_REJECTED', retryable: false, message: `${init.route} ${where}${what}`, route: init.route, status: init.status, body: init.body });
    this.name = 'ValidationError';
    this.detail = init.detail;
    this.local = init.local;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), detail: this.detail, local: this.local };
  }
}

export class NotFoundError extends CollectionsError {
  constructor(init: { route: string; body?: string }) {
    super({ code: 'COLLECTIONS_NOT_FOUND', retryable: false, message: `${init.route}: not found`, route: init.route, status: 404, body: init.body });
    this.name = 'NotFoundError';
  }
}

const AUTH_CODES = { missing: 'AUTH_MISSING', expired: 'AUTH_EXPIRED', superseded: 'AUTH_SUPERSEDED', invalid: 'AUTH_INVALID' } as const;

/** 401 after the client's own re-acquisitions. Expired and superseded tokens heal with a rotation: retryable. */
export class AuthError extends CollectionsError {
  readonly reason: AuthRejectReason;
  constructor(init: { route: string; reason: AuthRejectReason; body?: string }) {
    super({
      code: AUTH_CODES[init.reason],
      retryable: init.reason === 'expired' || init.reason === 'superseded',
      message: `${init.route}: token ${init.reason}`,
      route: init.route,
      status: 401,
      body: init.body,
    });
    this.name = 'AuthError';
    this.reason = init.reason;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), reason: this.reason };
  }
}

export class RateLimitedError extends CollectionsError {
  /** From Retry-After (seconds or HTTP-date); undefined when the header is absent or unreadable. */
  readonly retryAfterMs: number | undefined;
  constructor(init: { route: string; retryAfterMs: number | undefined; body?: string }) {
    const after = init.retryAfterMs === undefined ? '' : ` (retry after ${init.retryAfterMs} ms)`;
    super({ code: 'COLLECTIONS_RATE_LIMITED', retryable: true, message: `${init.route}: rate limited${after}`, route: init.route, status: 429, body: init.body });
    this.name = 'RateLimitedError';
    this.retryAfterMs = init.retryAfterMs;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), retryAfterMs: this.retryAfterMs };
  }
}

/** The request did not take effect: a 5xx answered before processing, or it never reached the service. */
export class TransientError extends CollectionsError {
  constructor(init: { route: string; message: string; status?: number; body?: string; cause?: unknown }) {
    super({ code: 'COLLECTIONS_TRANSIENT', retryable: true, ...init, message: `${init.route}: ${init.message}` });
    this.name = 'TransientError';
  }
}

/**
 * The request was sent and no answer came (timeout, reset, dropped connection): the write may have happened.
 * `retryable` is true only for idempotent operations; the caller of a create or a call decides.
 */
export class AmbiguousError extends CollectionsError {
  readonly idempotent: boolean;
  constructor(init: { route: string; message: string; idempotent: boolean; status?: number; body?: string; cause?: unknown }) {
    const { idempotent, ...rest } = init;
    super({ code: 'COLLECTIONS_AMBIGUOUS', retryable: idempotent, ...rest, message: `${init.route}: ${init.message}; the write may have happened` });
    this.name = 'AmbiguousError';
    this.idempotent = idempotent;
  }
}

export interface ResponseIssue {
  path: (string | number)[];
  message: string;
  code: string;
}

/** A success answer whose body does not match the contract. */
export class BadResponseError extends CollectionsError {
  readonly issues: ResponseIssue[];
  constructor(init: { route: string; status: number; issues: ResponseIssue[]; body?: string; cause?: unknown }) {
    const first = init.issues[0];
    const what = first ? `: ${first.path.join('.') || '(root)'} ${first.message}` : '';
    super({ code: 'COLLECTIONS_BAD_RESPONSE', retryable: false, message: `${init.route}: unexpected response body${what}`, route: init.route, status: init.status, body: init.body, cause: init.cause });
    this.name = 'BadResponseError';
    this.issues = init.issues;
  }
  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), issues: this.issues };
  }
}

/** The caller's own AbortSignal fired. Never retried. */
export class AbortedError extends CollectionsError {
  constructor(init: { route: string; cause?: unknown }) {
    super({ code: 'ABORTED', retryable: false, message: `${init.route}: aborted by the caller`, route: init.route, cause: init.cause });
    this.name = 'AbortError';
  }
}

export function isCollectionsError(err: unknown): err is CollectionsError {
  return err instanceof CollectionsError;
}

/** The stable code of any thrown value ('UNKNOWN' for errors that are not ours). */
export function errorCode(err: unknown): CollectionsErrorCode | 'UNKNOWN' {
  return isCollectionsError(err) ? err.code : 'UNKNOWN';
}

/** Retry-After as milliseconds: the app's one parser (src/retry.ts), shared with the platforms' rate limiter. */
export { parseRetryAfter } from '../retry.js';
