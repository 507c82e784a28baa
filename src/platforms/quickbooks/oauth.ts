/**
 * QuickBooks Online as an OAuth platform: its token chain (Intuit refuses a replaced refresh token: no grace,
 * decision 0055; keys bound to `quickbooks:<realm>:<refresh|access>`), its limits per company (500 a minute, 10 in
 * flight), and its connect flow: authorize at appcenter.intuit.com (no PKCE: Intuit does not document it for
 * confidential clients), the company from the callback's `realmId` (checked against the tenants file's), and the
 * revoke endpoint.
 */
import type { BindResult, OAuthModule } from '../module.js';
import type { QuickBooksConfig } from './config.js';

export const quickBooksOAuth: OAuthModule<QuickBooksConfig> = {
  chain: {
    kind: 'quickbooks',
    connectionName: 'QuickBooks company (realmId)',
    reconnectWhere: "to that company in QuickBooks (the app's connect flow, scope com.intuit.quickbooks.accounting)",
    context: (connection, kind) => `quickbooks:${connection}:${kind}`,
    supportHeader: 'intuit_tid',
  },
  graceMs: 0,
  clientAuth: 'basic',
  idleLimitDays: 100,
  limits: { scope: 'connection', concurrent: 10, perMinute: 500, perDay: 0, appPerMinute: 0, leaseMs: 60_000, concurrentWaitMs: 30_000, dayBlockMs: 15 * 60_000 },
  requestIdHeader: 'intuit_tid',
  connectionWord: 'company',
  connectionField: 'realmId',
  credentials: (c) => ({ clientId: c.clientId, clientSecret: c.clientSecret, refreshToken: c.refreshToken }),
  connectionOf: (c) => c.realmId,
  tokenUrl: (c) => c.tokenUrl,
  authorize: (c) => ({ url: c.authorizeUrl, scopes: c.scopes, separator: ' ', pkce: false }),

  async bind({ config, callback }): Promise<BindResult> {
    const realmId = callback.searchParams.get('realmId');
    if (realmId === null || !/^[0-9]{1,32}$/.test(realmId)) return { kind: 'refuse', reason: 'no_realm', detail: 'the callback carried no realmId' };
    if (config.realmId !== undefined && config.realmId !== realmId) {
      return {
        kind: 'refuse',
        reason: 'other_company',
        detail: `the customer connected realm ${realmId}, the tenants file names ${config.realmId}`,
        text: 'You connected a different QuickBooks company from the one this link is for.',
      };
    }
    return { kind: 'bind', choice: { connection: realmId } };
  },

  async revoke({ config, clientSecret, accessToken, fetch }): Promise<string> {
    const basic = Buffer.from(`${config.clientId}:${clientSecret.reveal()}`, 'utf8').toString('base64');
    const res = await fetch(config.revokeUrl, {
      method: 'POST',
      headers: { authorization: `Basic ${basic}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ token: accessToken }),
    });
    if (res.status !== 200 && res.status !== 204) throw new Error(`the revoke endpoint answered ${res.status}${res.requestId ? ` (intuit_tid ${res.requestId})` : ''}`);
    return 'revoked';
  },
};
