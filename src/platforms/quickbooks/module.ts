/** QuickBooks Online as a plug-in (module.ts): its config, its OAuth facts and connect flow, its change notifications, its adapter. */
import type { PlatformModule } from '../module.js';
import { connectedAdapter } from '../oauth/connected.js';
import { quickBooksConfig, type QuickBooksConfig } from './config.js';
import { quickBooksOAuth } from './oauth.js';
import { quickBooksWebhook } from './webhook.js';

export const quickBooksModule: PlatformModule<QuickBooksConfig> = {
  kind: 'quickbooks',
  label: 'QuickBooks Online',
  config: quickBooksConfig,
  oauth: quickBooksOAuth,
  webhook: quickBooksWebhook,
  identities: (c) => ({
    app: { key: `quickbooks ${c.tokenUrl} ${c.clientId}`, clientId: c.clientId, secret: c.clientSecret },
    ...(c.realmId !== undefined ? { connection: { id: c.realmId, field: 'realmId', what: 'QuickBooks company (realmId)' } } : {}),
  }),
  createAdapter: (config, deps) =>
    connectedAdapter(quickBooksOAuth, config, deps, async (realmId, _binding, d) => {
      const [{ QuickBooksAdapter }, { quickBooksAccess }] = await Promise.all([import('./quickbooks-adapter.js'), import('./access.js')]);
      const logger = d.logger.child({ platform: 'quickbooks' });
      return new QuickBooksAdapter({
        redis: d.redis,
        prefix: d.prefix,
        realmId,
        apiUrl: config.apiUrl,
        access: (dispatcher) =>
          quickBooksAccess({ ...config, realmId }, { redis: d.redis, prefix: d.prefix, tokenKey: d.tokenKey, dispatcher, logger, ...(d.authHooks ? { hooks: d.authHooks } : {}), ...(d.auth ? { auth: d.auth } : {}) }),
        logger,
      });
    }),
};
