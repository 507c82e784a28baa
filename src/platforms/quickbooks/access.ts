/**
 * The access of the QuickBooks adapter to Intuit's API for one company (realm): the company's token chain (Intuit
 * refuses a replaced refresh token, so no grace: docs/decisions/0055) and its limits (500 requests a minute and 10
 * in flight per company), both shared with every process through Redis. The calls themselves go through the
 * shared driver (oauth/driver.ts); this file only says which chain and which limits.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { Agent, type Dispatcher } from 'undici';
import type { OAuthAccess, OAuthLease } from '../oauth/access.js';
import { connectionAccess } from '../oauth/chain.js';
import { TokenCipher } from '../oauth/cipher.js';
import type { PlatformAuthHooks, PlatformAuthSettings } from '../oauth/oauth.js';
import type { PlatformLimits } from '../oauth/rate-limiter.js';
import type { QuickBooksConfig } from './config.js';
import { QUICKBOOKS_THROTTLE_DEFAULT_MS } from './http.js';
import { quickBooksOAuth } from './oauth.js';

export { QUICKBOOKS_THROTTLE_DEFAULT_MS };

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

export type QuickBooksAccess = OAuthAccess;
export type QuickBooksLease = OAuthLease;

/** Builds the access for one quickbooks tenant's company (its config's realmId, or the one a connect link bound). */
export function quickBooksAccess(tenant: QuickBooksConfig, deps: QuickBooksAccessDeps): QuickBooksAccess {
  const realmId = tenant.realmId;
  if (realmId === undefined) throw new Error('quickbooks: the access needs the company (realmId): from the tenants file or a connect link');
  const dispatcher = deps.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 4, connect: { timeout: 5_000 } });
  return connectionAccess(quickBooksOAuth, tenant, realmId, undefined, {
    redis: deps.redis,
    prefix: deps.prefix,
    cipher: typeof deps.tokenKey === 'string' ? TokenCipher.fromText(deps.tokenKey) : deps.tokenKey,
    dispatcher,
    logger: deps.logger,
    hooks: deps.hooks,
    settings: deps.auth,
    limits: deps.limits,
    throttleDefaultMs: () => QUICKBOOKS_THROTTLE_DEFAULT_MS,
    owned: deps.dispatcher === undefined ? dispatcher : undefined,
  }).access;
}
