/** The public API of the collections client. */
export * from './schemas.js';
export type { AuthRejectReason, TokenLease, TokenProvider } from './token-provider.js';
export {
  AbortedError,
  AmbiguousError,
  AuthError,
  BadResponseError,
  CollectionsError,
  NotFoundError,
  RateLimitedError,
  TransientError,
  ValidationError,
  errorCode,
  isCollectionsError,
  parseRetryAfter,
  trimBody,
  type CollectionsErrorCode,
  type ResponseIssue,
} from './errors.js';
export { createAgent, DEFAULT_TIMEOUTS, type Timeouts } from './http.js';
export { DEFAULT_BACKOFF, type Backoff } from './retry.js';
export { CollectionsClient, type CallOptions, type CallResult, type CollectionsClientOptions, type RequestEvent } from './client.js';
export { requestToken, jwtExpiryMs, TOKEN_ROUTE, type IssuedToken, type RequestTokenOptions } from './token.js';
export { StaticTokenProvider, FixedTokenProvider, type StaticTokenProviderOptions } from './static-token-provider.js';
