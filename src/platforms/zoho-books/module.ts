/** Zoho Books as a plug-in (module.ts): its config, its OAuth facts and connect flow (oauth.ts), its adapter. */
import type { PlatformModule } from '../module.js';
import { connectedAdapter } from '../oauth/connected.js';
import { mainAccounts, zohoBooksConfig, type ZohoBooksConfig } from './config.js';
import { zohoBooksOAuth } from './oauth.js';
import { ZohoBooksAdapter } from './zoho-books-adapter.js';

export const zohoBooksModule: PlatformModule<ZohoBooksConfig> = {
  kind: 'zoho-books',
  label: 'Zoho Books',
  config: zohoBooksConfig,
  oauth: zohoBooksOAuth,
  identities: (c) => ({
    app: { key: `zoho-books ${mainAccounts(c)} ${c.clientId}`, secret: c.clientSecret },
    ...(c.organizationId !== undefined ? { connection: { id: c.organizationId, field: 'organizationId', what: 'Zoho Books organization' } } : {}),
  }),
  createAdapter: (config, deps) =>
    connectedAdapter(zohoBooksOAuth, config, deps, (organizationId, binding, d) =>
      new ZohoBooksAdapter({
        redis: d.redis,
        prefix: d.prefix,
        tokenKey: d.tokenKey,
        config,
        organizationId,
        binding,
        logger: d.logger.child({ platform: 'zoho-books' }),
        ...(d.authHooks ? { hooks: d.authHooks } : {}),
        ...(d.auth ? { auth: d.auth } : {}),
      }),
    ),
};
