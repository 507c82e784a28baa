export { XeroAdapter, nextPosition, DEFAULT_XERO_PAGE_SIZE, MAX_XERO_PAGE_SIZE, type XeroAdapterOptions } from './xero-adapter.js';
export { XeroTokenStore, XeroRateLimiter, XERO_LIMITS, XERO_OAUTH, TokenCipher, parseTokenKey } from '../oauth/index.js';
export { XeroHttp, DEFAULT_HTTP_SETTINGS, type XeroHttpSettings } from './http.js';
export { parseXeroDate, xeroDate, xeroTimestamp, ifModifiedSince, type XeroInstant } from './dates.js';
export { mapXeroItem, contactRecordFrom, invoiceRecordFrom, paymentRecordFrom, formatPhone, pickPhone, pickAddress, type ItemOutcome, type ItemPosition } from './mapping.js';
export { encodeXeroToken, decodeXeroToken, type XeroPosition } from './page-token.js';
