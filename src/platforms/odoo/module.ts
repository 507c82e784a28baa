/**
 * Odoo as a plug-in (module.ts): its config and its adapter, loaded on the first read. Not OAuth: no connect link and
 * no token chain; the tenants file's API key is the connection (decision 0210).
 */
import { LazyAdapter } from '../lazy-adapter.js';
import type { PlatformModule } from '../module.js';
import { odooConfig, type OdooConfig } from './config.js';
import { OdooKeyState, odooDatabase } from './key-state.js';

export const odooModule: PlatformModule<OdooConfig> = {
  kind: 'odoo',
  label: 'Odoo',
  config: odooConfig,
  // One tenant per (database, company): two would push one company's records twice.
  identities: (c) => ({ connection: { id: `${new URL(c.url).origin}/${c.database}#${c.companyId ?? 'only'}`, field: 'companyId', what: 'Odoo database and company' } }),
  // A refused key, or companies to choose from, as the runs left them (key-state.ts).
  connectionState: async (config, deps) => {
    const connection = `${new URL(config.url).origin}/${config.database}${config.companyId !== undefined ? `#${config.companyId}` : ''}`;
    const known = await new OdooKeyState(deps.redis, deps.prefix, odooDatabase(config.url, config.database)).read();
    if (known.refused) return { state: 'needs_reconnect', connection, reason: known.refused.reason, next: "make a new API key for the bot user in Odoo and put it in the tenant's platform.apiKey (docs/odoo.md)" };
    if (config.companyId === undefined && known.unchosen !== undefined) return { state: 'awaiting_connection', connection, reason: known.unchosen, next: known.unchosen.replace(/^.*; /, '') };
    return { state: 'connected', connection };
  },
  createAdapter: (config, deps) =>
    new LazyAdapter('odoo', async () => {
      const { OdooAdapter } = await import('./odoo-adapter.js');
      return new OdooAdapter({ config, logger: deps.logger.child({ platform: 'odoo' }), redis: deps.redis, prefix: deps.prefix, ...(deps.authHooks ? { hooks: deps.authHooks } : {}) });
    }),
};
