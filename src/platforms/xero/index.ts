export { XeroAdapter, nextPosition, DEFAULT_XERO_PAGE_SIZE, MAX_XERO_PAGE_SIZE, type XeroAdapterOptions } from './xero-adapter.js';
export { XeroTokenStore, TokenCipher, parseTokenKey } from '../oauth/index.js';
export { xeroOAuth } from './oauth.js';
export { xeroConfig, XERO_DEFAULT_SCOPES, type XeroConfig } from './config.js';
export { xeroModule } from './module.js';
export { XeroHttp, DEFAULT_HTTP_SETTINGS, type XeroHttpSettings } from './http.js';
export { parseXeroDate, xeroDate, xeroTimestamp, ifModifiedSince, type XeroInstant } from './dates.js';
export { mapXeroItem, contactRecordFrom, invoiceRecordFrom, paymentRecordFrom, formatPhone, pickPhone, pickAddress, type ItemOutcome, type ItemPosition } from './mapping.js';
export { encodeXeroToken, decodeXeroToken, type XeroPosition } from './page-token.js';
