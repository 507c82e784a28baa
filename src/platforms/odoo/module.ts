/**
 * Odoo as a plug-in (module.ts): its config and its adapter, loaded on the first read. Not OAuth: no connect link and
 * no token chain; the tenants file's API key is the connection (decision 0210).
 */
import { LazyAdapter } from '../lazy-adapter.js';
import type { PlatformModule } from '../module.js';
import { odooConfig, type OdooConfig } from './config.js';

export const odooModule: PlatformModule<OdooConfig> = {
  kind: 'odoo',
  label: 'Odoo',
  config: odooConfig,
  // One tenant per (database, company): two would push one company's records twice.
  identities: (c) => ({ connection: { id: `${new URL(c.url).origin}/${c.database}#${c.companyId ?? 'only'}`, field: 'companyId', what: 'Odoo database and company' } }),
  createAdapter: (config, deps) =>
    new LazyAdapter('odoo', async () => {
      const { OdooAdapter } = await import('./odoo-adapter.js');
      return new OdooAdapter({ config, logger: deps.logger.child({ platform: 'odoo' }), redis: deps.redis, prefix: deps.prefix, ...(deps.authHooks ? { hooks: deps.authHooks } : {}) });
    }),
};
