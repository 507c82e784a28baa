export { XeroAdapter, nextPosition, DEFAULT_XERO_PAGE_SIZE, MAX_XERO_PAGE_SIZE, type XeroAdapterOptions } from './xero-adapter.js';
export { XeroAuth, DEFAULT_AUTH_SETTINGS, type AccessToken, type XeroAuthHooks, type XeroAuthOptions, type XeroAuthSettings } from './oauth.js';
export { XeroTokenStore, type StoredState, type StoredTokens } from './token-store.js';
export { XeroRateLimiter, XERO_LIMITS, type LimitScope, type Lease, type XeroLimits } from './rate-limiter.js';
export { XeroHttp, retryAfterMs, DEFAULT_HTTP_SETTINGS, type XeroHttpSettings } from './http.js';
export { TokenCipher, parseTokenKey } from './cipher.js';
export { parseXeroDate, xeroDate, xeroTimestamp, ifModifiedSince, type XeroInstant } from './dates.js';
export { mapXeroItem, contactRecordFrom, invoiceRecordFrom, paymentRecordFrom, formatPhone, pickPhone, pickAddress, type ItemOutcome, type ItemPosition } from './mapping.js';
export { encodeXeroToken, decodeXeroToken, type XeroPosition } from './page-token.js';
