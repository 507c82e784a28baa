/**
 * The one place a token chain (PlatformAuth) and an OAuth platform's access to its API are built (issue 37), from the
 * platform's module: its names and rules (`oauth.chain`, `graceMs`, `clientAuth`), its credentials and token endpoint
 * (for a connection a connect link bound: the binding's), its limits. Adapters, connect links, `connect status` and
 * revoke all take their chain from here, so no two of them can build it differently.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { OAuthModule } from '../module.js';
import { oauthAccess, type OAuthAccess } from './access.js';
import type { Binding } from './binding.js';
import type { TokenCipher } from './cipher.js';
import { PlatformAuth, type PlatformAuthHooks, type PlatformAuthSettings } from './oauth.js';
import { limiterFor, type LimitScope, type PlatformLimits, type PlatformRateLimiter } from './rate-limiter.js';

export interface ChainDeps {
  redis: Redis;
  prefix: string;
  cipher: TokenCipher;
  dispatcher: Dispatcher;
  logger?: Logger | undefined;
  hooks?: PlatformAuthHooks | undefined;
  /** Tests: short locks, waits and graces (a platform without a grace keeps none). */
  settings?: Partial<PlatformAuthSettings> | undefined;
}

/** The token chain of `connection` (an organisation, a company) of a tenant whose platform config is `config`. */
export function platformAuth<C>(module: OAuthModule<C>, config: C, connection: string, binding: Binding | undefined, deps: ChainDeps): PlatformAuth {
  const { clientId, clientSecret, refreshToken } = module.credentials(config);
  const settings = deps.settings ?? {};
  return new PlatformAuth({
    platform: module.chain,
    redis: deps.redis,
    prefix: deps.prefix,
    connection,
    clientId,
    clientSecret,
    refreshToken,
    tokenUrl: module.tokenUrl(config, binding),
    clientAuth: module.clientAuth,
    cipher: deps.cipher,
    dispatcher: deps.dispatcher,
    // A platform that refuses a used refresh token at once keeps no grace, whatever a test asks.
    settings: { ...settings, graceMs: module.graceMs === 0 ? 0 : (settings.graceMs ?? module.graceMs) },
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.hooks ? { hooks: deps.hooks } : {}),
  });
}

/** The chain, the limiter and the access (access.ts) of one connection. */
export function connectionAccess<C>(
  module: OAuthModule<C>,
  config: C,
  connection: string,
  binding: Binding | undefined,
  deps: ChainDeps & { limits?: Partial<PlatformLimits> | undefined; throttleDefaultMs: (scope: LimitScope, limiter: PlatformRateLimiter) => number; owned?: Dispatcher | undefined },
): { auth: PlatformAuth; limiter: PlatformRateLimiter; access: OAuthAccess } {
  const auth = platformAuth(module, config, connection, binding, deps);
  const limiter = limiterFor({ kind: module.chain.kind, limits: module.limits }, deps.redis, deps.prefix, connection, module.credentials(config).clientId, deps.limits);
  const access = oauthAccess({
    name: module.chain.kind,
    connection,
    auth,
    limiter,
    throttleDefaultMs: (scope) => deps.throttleDefaultMs(scope, limiter),
    ...(deps.owned ? { owned: deps.owned } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
  return { auth, limiter, access };
}
