/**
 * What a platform's HTTP driver needs to call an OAuth platform's API for one connection: access tokens from the
 * shared token chain (rotating refresh tokens, one refresh at a time across every process, encrypted at rest under
 * PLATFORM_TOKEN_KEY) and leases from the shared limiter (the platform's limits, across every process).
 *
 * How a call goes (the driver, oauth/driver.ts, does exactly this):
 *   const token = await access.token();
 *   const lease = await access.lease(signal);
 *   try { ...GET with `authorization: Bearer ${token}`...; await access.observe(res.headers) } finally { await lease.release(); }
 *   401: `const fresh = await access.onUnauthorized(token)` and send once more with it.
 *   429: `throw await access.throttled(res.headers['retry-after'], scope)` (every process then waits).
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { retry, type RetryPolicy } from '../../retry.js';
import { PlatformError, PlatformRateLimitedError } from '../types.js';
import type { AccessToken, PlatformAuth } from './oauth.js';
import { describe, retryAfterMs, type LimitScope, type PlatformRateLimiter } from './rate-limiter.js';

/** One in-flight slot; release it once the answer's body is read (a crashed process's slot frees itself). */
export interface OAuthLease {
  release(): Promise<void>;
}

export interface OAuthAccess {
  /** A valid access token for the connection (refreshed first when it is due; errors are PlatformErrors). */
  token(): Promise<string>;
  /**
   * The API refused `rejected` (401): a fresh token. A burst of 401s for one token makes one refresh; a token newer
   * than `rejected` is returned as it is. A revoked grant throws PLATFORM_AUTH_FAILED with what to do.
   */
  onUnauthorized(rejected: string): Promise<string>;
  /** A slot for one API call (waits, bounded, for a free in-flight slot; a spent limit throws a rate limit). */
  lease(signal?: AbortSignal): Promise<OAuthLease>;
  /** Reads an answer's limit headers (Xero's `X-...-Remaining`): a limit reported spent blocks every process. */
  observe?(headers: Record<string, string | string[] | undefined>): Promise<void>;
  /** A 429: blocks every process's calls in `scope` for Retry-After (or the platform's default) and returns the error to throw. */
  throttled(retryAfter: string | undefined, scope?: LimitScope): Promise<PlatformRateLimitedError>;
  close(): Promise<void>;
}

export interface OAuthAccessOptions {
  /** `xero`, `quickbooks`: names log lines and errors. */
  name: string;
  /** The connection (organisation, realm) for log lines. */
  connection: string;
  auth: PlatformAuth;
  limiter: PlatformRateLimiter;
  /** How long every process waits after a 429 without Retry-After, by the limit it hit. */
  throttleDefaultMs: (scope: LimitScope) => number;
  /** Retries of a token fetch that failed retryably (the endpoint down, another process's refresh too slow). */
  tokenRetries?: number;
  /** A dispatcher the access owns (closed by `close()`). */
  owned?: Dispatcher;
  logger?: Logger;
}

const TOKEN_RETRIES = 2;

/**
 * A token fetch that failed retryably (PLATFORM_UNAVAILABLE: the endpoint down, another process's refresh too slow)
 * is tried again after 250 ms, then 500 ms, ... (equal jitter: between half and all of it), the last wait capped at
 * what `retries` allows.
 */
export function tokenPolicy(retries: number): RetryPolicy {
  return { retries, baseMs: 250, capMs: 250 * 2 ** Math.max(0, retries - 1), jitter: 'equal', retryable: (err) => err instanceof PlatformError && err.code === 'PLATFORM_UNAVAILABLE' };
}

/** The access for one connection, over its token chain and its limiter (both shared through Redis). */
export function oauthAccess(o: OAuthAccessOptions): OAuthAccess {
  // The versions of the tokens handed out lately: a 401 names the token, the chain wants its version.
  const versions = new Map<string, number>();
  const remember = (a: AccessToken): string => {
    versions.set(a.token, a.version);
    if (versions.size > 16) versions.delete(versions.keys().next().value!);
    return a.token;
  };
  const policy = tokenPolicy(o.tokenRetries ?? TOKEN_RETRIES);
  const fetch = (rejected?: number): Promise<AccessToken> =>
    retry(() => o.auth.accessToken(rejected), policy, {
      onRetry: ({ error, attemptNumber }) => o.logger?.warn({ connection: o.connection, failures: attemptNumber, reason: error.message }, `${o.name}: retrying the token`),
    });
  return {
    async token() {
      return remember(await fetch());
    },
    async onUnauthorized(rejected) {
      let version = versions.get(rejected);
      if (version === undefined) {
        // Not one of ours lately (another instance's): refresh only if the stored token is that one.
        const current = await fetch();
        if (current.token !== rejected) return remember(current);
        version = current.version;
      }
      o.logger?.info({ connection: o.connection }, `${o.name}: the API refused the access token; refreshing it once`);
      return remember(await fetch(version));
    },
    lease(signal) {
      return o.limiter.acquire(signal);
    },
    observe(headers) {
      return o.limiter.observe(headers);
    },
    async throttled(retryAfter, scope = 'minute') {
      const waitMs = retryAfterMs(retryAfter) ?? o.throttleDefaultMs(scope);
      await o.limiter.block(scope, waitMs);
      o.logger?.warn({ connection: o.connection, scope, waitMs }, `${o.name}: rate limited (429)`);
      return new PlatformRateLimitedError(scope, waitMs, `${o.name}: ${describe(scope)} limit reached for ${o.connection}; every process waits ${Math.ceil(waitMs / 1000)} s`);
    },
    async close() {
      await o.owned?.close().catch(() => undefined);
    },
  };
}
