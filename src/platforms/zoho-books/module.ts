/** Zoho Books as a plug-in (module.ts): its config, its OAuth facts and connect flow (oauth.ts), its adapter. */
import type { PlatformModule } from '../module.js';
import { connectedAdapter } from '../oauth/connected.js';
import { mainAccounts, zohoBooksConfig, type ZohoBooksConfig } from './config.js';
import { zohoBooksOAuth } from './oauth.js';

export const zohoBooksModule: PlatformModule<ZohoBooksConfig> = {
  kind: 'zoho-books',
  label: 'Zoho Books',
  config: zohoBooksConfig,
  oauth: zohoBooksOAuth,
  identities: (c) => ({
    app: { key: `zoho-books ${mainAccounts(c)} ${c.clientId}`, clientId: c.clientId, secret: c.clientSecret },
    ...(c.organizationId !== undefined ? { connection: { id: c.organizationId, field: 'organizationId', what: 'Zoho Books organization' } } : {}),
  }),
  createAdapter: (config, deps) =>
    connectedAdapter(zohoBooksOAuth, config, deps, async (organizationId, binding, d) => {
      const { ZohoBooksAdapter } = await import('./zoho-books-adapter.js');
      return new ZohoBooksAdapter({
        redis: d.redis,
        prefix: d.prefix,
        tokenKey: d.tokenKey,
        config,
        organizationId,
        binding,
        logger: d.logger.child({ platform: 'zoho-books' }),
        ...(d.authHooks ? { hooks: d.authHooks } : {}),
        ...(d.auth ? { auth: d.auth } : {}),
      });
    }),
};
