/**
 * The platform-OAuth room: what every OAuth 2.0 platform's module and adapter shares to reach its API from
 * many processes at once: rotating refresh tokens kept encrypted in Redis with one refresh at a time
 * (oauth.ts, token-store.ts, cipher.ts), the API's limits kept in Redis (rate-limiter.ts), and the one request
 * path every platform shares: token, lease, request, classify, back-off, rate limit (access.ts, driver.ts).
 */
export { PlatformAuth, DEFAULT_AUTH_SETTINGS, clientAuthOf, type AccessToken, type OAuthPlatform, type PlatformAuthHooks, type PlatformAuthOptions, type PlatformAuthSettings } from './oauth.js';
export { PlatformTokenStore, XeroTokenStore, type OAuthPlatformKind, type StoredState, type StoredTokens, type CommitResult } from './token-store.js';
export { PlatformRateLimiter, limiterFor, limitKeysOf, retryAfterMs, describe as describeLimit, type LimitKeys, type LimitScope, type Lease, type PlatformLimits } from './rate-limiter.js';
export { TokenCipher, parseTokenKey } from './cipher.js';
export { oauthAccess, type OAuthAccess, type OAuthAccessOptions, type OAuthLease } from './access.js';
export { PlatformDriver, type DriverCall, type DriverOptions, type DriverSettings, type PlatformAnswer, type PlatformDescriptor, type Verdict } from './driver.js';
export { platformAuth, connectionAccess, type ChainDeps } from './chain.js';
export { connectedAdapter } from './connected.js';
