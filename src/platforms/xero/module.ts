/** Xero as a plug-in (module.ts): its config, its OAuth facts and connect flow (oauth.ts), its adapter. */
import type { PlatformModule } from '../module.js';
import { connectedAdapter } from '../oauth/connected.js';
import { xeroConfig, type XeroConfig } from './config.js';
import { xeroOAuth } from './oauth.js';

export const xeroModule: PlatformModule<XeroConfig> = {
  kind: 'xero',
  label: 'Xero',
  config: xeroConfig,
  oauth: xeroOAuth,
  identities: (c) => ({
    app: { key: `xero ${c.tokenUrl} ${c.clientId}`, clientId: c.clientId, secret: c.clientSecret },
    ...(c.xeroTenantId !== undefined ? { connection: { id: c.xeroTenantId, field: 'xeroTenantId', what: 'Xero organisation' } } : {}),
  }),
  createAdapter: (config, deps) =>
    connectedAdapter(xeroOAuth, config, deps, async (connection, _binding, d) => {
      const { XeroAdapter } = await import('./xero-adapter.js');
      return new XeroAdapter({
        redis: d.redis,
        prefix: d.prefix,
        tokenKey: d.tokenKey,
        config,
        xeroTenantId: connection,
        logger: d.logger.child({ platform: 'xero' }),
        ...(d.authHooks ? { hooks: d.authHooks } : {}),
        ...(d.auth ? { auth: d.auth } : {}),
      });
    }),
};
