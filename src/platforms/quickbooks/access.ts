/**
 * What the QuickBooks adapter needs to call Intuit's API for one company (realm): access tokens from the shared
 * platform-OAuth room (rotating refresh tokens, one refresh at a time across every process, encrypted at rest
 * under PLATFORM_TOKEN_KEY) and a lease from the shared limiter (500 requests a minute and 10 in flight per
 * company, across every process). The adapter owns the requests themselves (URLs, Fault bodies, intuit_tid).
 *
 * How a call goes:
 *   const token = await access.token();
 *   const lease = await access.lease(signal);
 *   try { ...GET with `authorization: Bearer ${token}`... } finally { await lease.release(); }
 *   401 / AuthenticationFault: `const fresh = await access.onUnauthorized(token)` and send once more with it.
 *   429: `throw await access.throttled(res.headers['retry-after'])` (every process then waits; the error says how long).
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { QuickBooksTenant } from '../../config/tenants.js';
import type { PlatformRateLimitedError } from '../types.js';

export interface QuickBooksAccessDeps {
  /** The fleet's Redis (tokens and limits live there; not closed here). */
  redis: Redis;
  /** KEY_PREFIX. */
  prefix: string;
  /** PLATFORM_TOKEN_KEY (32 bytes as base64 or hex). */
  tokenKey: string;
  /** The adapter's undici Agent for the token endpoint; its own when absent (closed by `close()`). */
  dispatcher?: Dispatcher;
  logger?: Logger;
}

/** One in-flight slot; release it once the answer's body is read (a crashed process's slot frees itself). */
export interface QuickBooksLease {
  release(): Promise<void>;
}

export interface QuickBooksAccess {
  /** A valid access token for the company (refreshed first when it is due; errors are PlatformErrors). */
  token(): Promise<string>;
  /**
   * The API refused `rejected` (401, AuthenticationFault): a fresh token. A burst of 401s for one token makes one
   * refresh; a token newer than `rejected` is returned as it is. A revoked grant throws PLATFORM_AUTH_FAILED with
   * what to do.
   */
  onUnauthorized(rejected: string): Promise<string>;
  /** A slot for one API call (waits, bounded, for one of the 10 in flight; a spent minute throws a rate limit). */
  lease(signal?: AbortSignal): Promise<QuickBooksLease>;
  /** A 429: blocks every process's calls for Retry-After (or 60 s) and returns the error to throw. */
  throttled(retryAfter: string | undefined): Promise<PlatformRateLimitedError>;
  close(): Promise<void>;
}

/** Builds the access for one quickbooks tenant. (Implemented on the shared platform-OAuth room: next commits.) */
export function quickBooksAccess(tenant: QuickBooksTenant, deps: QuickBooksAccessDeps): QuickBooksAccess {
  void tenant;
  void deps;
  throw new Error('quickBooksAccess: not implemented yet (issue 15 item 2 lands it)');
}
