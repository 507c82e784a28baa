export { QuickBooksAdapter, nextPosition, queryStatement, qboInstant, DEFAULT_QBO_PAGE_SIZE, MAX_QBO_PAGE_SIZE, CDC_WINDOW_MS, type QuickBooksAdapterOptions } from './quickbooks-adapter.js';
export { quickBooksAccess, type QuickBooksAccess, type QuickBooksAccessDeps, type QuickBooksLease } from './access.js';
export { QuickBooksHttp, QuickBooksFaultError, QBO_MINOR_VERSION, DEFAULT_QBO_HTTP_SETTINGS, type QuickBooksHttpSettings } from './http.js';
export { mapQboItem, contactRecordFrom, invoiceRecordFrom, paymentLines, isVoided, firstEmail, addressFields, qboMs, qboDate, placeOf, type QboOutcome, type ItemPosition, type PaymentLines } from './mapping.js';
export { QuickBooksMemory, type Seen } from './memory.js';
export { encodeQboToken, decodeQboToken, type QboPosition } from './page-token.js';
export { parseFault, parseQueryResponse, parseCdcResponse, QBO_ENTITY, type QboFault, type QboEntity, type FaultType } from './schemas.js';
