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
import { Agent, type Dispatcher } from 'undici';
import type { QuickBooksTenant } from '../../config/tenants.js';
import { TokenCipher } from '../oauth/cipher.js';
import { PlatformAuth, QUICKBOOKS_OAUTH, type AccessToken, type PlatformAuthHooks, type PlatformAuthSettings } from '../oauth/oauth.js';
import { QuickBooksRateLimiter, retryAfterMs, type PlatformLimits } from '../oauth/rate-limiter.js';
import { PlatformError, PlatformRateLimitedError } from '../types.js';

export interface QuickBooksAccessDeps {
  /** The fleet's Redis (tokens and limits live there; not closed here). */
  redis: Redis;
  /** KEY_PREFIX. */
  prefix: string;
  /** PLATFORM_TOKEN_KEY (32 bytes as base64 or hex), or a ready cipher. */
  tokenKey: string | TokenCipher;
  /** The adapter's undici Agent for the token endpoint; its own when absent (closed by `close()`). */
  dispatcher?: Dispatcher;
  logger?: Logger;
  /** Overrides of the token chain's settings (tests: short locks) and its test seams. */
  auth?: Partial<PlatformAuthSettings>;
  hooks?: PlatformAuthHooks;
  /** Overrides of Intuit's limits (500 a minute, 10 in flight per company). */
  limits?: Partial<PlatformLimits>;
}

/** How long every process waits after a 429 without Retry-After. */
export const QUICKBOOKS_THROTTLE_DEFAULT_MS = 60_000;
/** Retries of a token fetch that failed retryably (the endpoint down, another process's refresh too slow). */
const TOKEN_RETRIES = 2;

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

/**
 * Builds the access for one quickbooks tenant: the company's token chain (Intuit refuses a replaced refresh token,
 * so no grace: docs/decisions/0055) and its limits, both shared with every process through Redis.
 */
export function quickBooksAccess(tenant: QuickBooksTenant, deps: QuickBooksAccessDeps): QuickBooksAccess {
  const dispatcher = deps.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 4, connect: { timeout: 5_000 } });
  const own = deps.dispatcher === undefined ? dispatcher : undefined;
  const auth = new PlatformAuth({
    platform: QUICKBOOKS_OAUTH,
    redis: deps.redis,
    prefix: deps.prefix,
    connection: tenant.realmId,
    clientId: tenant.clientId,
    clientSecret: tenant.clientSecret,
    refreshToken: tenant.refreshToken,
    tokenUrl: tenant.tokenUrl,
    cipher: typeof deps.tokenKey === 'string' ? TokenCipher.fromText(deps.tokenKey) : deps.tokenKey,
    dispatcher,
    settings: { ...deps.auth, graceMs: 0 },
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.hooks ? { hooks: deps.hooks } : {}),
  });
  const limiter = new QuickBooksRateLimiter(deps.redis, deps.prefix, tenant.realmId, deps.limits);
  // The versions of the tokens handed out lately: a 401 names the token, the chain wants its version.
  const versions = new Map<string, number>();
  const remember = (a: AccessToken): string => {
    versions.set(a.token, a.version);
    if (versions.size > 16) versions.delete(versions.keys().next().value!);
    return a.token;
  };
  const fetch = async (rejected?: number): Promise<AccessToken> => {
    for (let failures = 0; ; failures += 1) {
      try {
        return await auth.accessToken(rejected);
      } catch (err) {
        if (!(err instanceof PlatformError) || err.code !== 'PLATFORM_UNAVAILABLE' || failures >= TOKEN_RETRIES) throw err;
        deps.logger?.warn({ realmId: tenant.realmId, failures: failures + 1, reason: err.message }, 'quickbooks: retrying the token');
        await new Promise((r) => setTimeout(r, 250 * 2 ** failures));
      }
    }
  };
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
      deps.logger?.info({ realmId: tenant.realmId }, 'quickbooks: the API refused the access token; refreshing it once');
      return remember(await fetch(version));
    },
    lease(signal) {
      return limiter.acquire(signal);
    },
    async throttled(retryAfter) {
      const waitMs = retryAfterMs(retryAfter) ?? QUICKBOOKS_THROTTLE_DEFAULT_MS;
      await limiter.block('minute', waitMs);
      deps.logger?.warn({ realmId: tenant.realmId, waitMs }, 'quickbooks: rate limited (429)');
      return new PlatformRateLimitedError('minute', waitMs, `quickbooks: Intuit answered 429 for company ${tenant.realmId}; every process waits ${Math.ceil(waitMs / 1000)} s`);
    },
    async close() {
      await own?.close().catch(() => undefined);
    },
  };
}
