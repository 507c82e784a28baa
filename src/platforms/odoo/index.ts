export { OdooAdapter, entityDomain, cursorDomain, DEFAULT_ODOO_PAGE_SIZE, MAX_ODOO_PAGE_SIZE, type OdooAdapterOptions } from './odoo-adapter.js';
export { odooConfig, ODOO_PROTOCOLS, type OdooConfig, type OdooProtocol } from './config.js';
export { odooModule } from './module.js';
export { OdooClient, READ_METHODS, JSON2_FROM, OLDEST_SUPPORTED, DEFAULT_ODOO_HTTP_SETTINGS, type OdooCall, type OdooHttpSettings, type Transport } from './transport.js';
export { mapPartner, mapMove, mapPayment, odooTimestamp, odooDatetime } from './mapping.js';
