export { ZohoBooksAdapter, nextPosition, DEFAULT_ZOHO_PAGE_SIZE, MAX_ZOHO_PAGE_SIZE, type ZohoBooksAdapterOptions } from './zoho-books-adapter.js';
export { zohoBooksConfig, ZOHO_DATA_CENTRES, ZOHO_ACCOUNTS, ZOHO_API_DOMAINS, ZOHO_BOOKS_SCOPES, trusted, type ZohoBooksConfig, type ZohoDataCentre } from './config.js';
export { zohoBooksOAuth, accountsOf, apiDomainOf } from './oauth.js';
export { zohoBooksModule } from './module.js';
export { ZohoHttp, classify, limitOf, zohoBooksPlatform, DEFAULT_ZOHO_HTTP_SETTINGS, type ZohoHttpSettings } from './http.js';
export { zohoMs, zohoTimestamp, zohoDate, zohoInstant } from './dates.js';
export { mapZohoItem, contactRecordFrom, invoiceRecordFrom, paymentLines, type ZohoOutcome, type ItemPosition } from './mapping.js';
export { encodeZohoToken, decodeZohoToken, type ZohoPosition } from './page-token.js';
