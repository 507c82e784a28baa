/**
 * Xero as an OAuth platform: its token chain's names (keys bound to `<org>:<refresh|access>`), its limits per
 * organisation and app, and its connect flow: authorize with PKCE S256 at login.xero.com, the organisations of a
 * grant from `GET /connections` (the tenants file's, the only one, or the customer's pick), and `DELETE
 * /connections/{id}` to disconnect one.
 */
import { z } from 'zod';
import type { BindResult, ConnectionChoice, OAuthModule } from '../module.js';
import type { XeroConfig } from './config.js';

const connectionsSchema = z.array(z.looseObject({ id: z.string(), tenantId: z.string(), tenantType: z.string().optional(), tenantName: z.string().nullish() }));

export const xeroOAuth: OAuthModule<XeroConfig> = {
  chain: {
    kind: 'xero',
    connectionName: 'Xero organisation',
    reconnectWhere: 'to that organisation in Xero',
    context: (connection, kind) => `${connection}:${kind}`,
  },
  // Xero honours a used refresh token for 30 minutes while its successor was never used; 25 to be safe.
  graceMs: 25 * 60_000,
  clientAuth: 'basic',
  idleLimitDays: 60,
  limits: { scope: 'app', concurrent: 5, perMinute: 60, perDay: 5_000, appPerMinute: 10_000, leaseMs: 60_000, concurrentWaitMs: 30_000, dayBlockMs: 15 * 60_000 },
  requestIdHeader: 'xero-correlation-id',
  connectionWord: 'organisation',
  connectionField: 'xeroTenantId',
  credentials: (c) => ({ clientId: c.clientId, clientSecret: c.clientSecret, refreshToken: c.refreshToken }),
  connectionOf: (c) => c.xeroTenantId,
  tokenUrl: (c) => c.tokenUrl,
  authorize: (c) => ({ url: c.authorizeUrl, scopes: c.scopes, separator: ' ', pkce: true }),

  async bind({ config, grant, fetch }): Promise<BindResult> {
    const got = await fetch(config.connectionsUrl, { headers: { authorization: `Bearer ${grant.accessToken}`, accept: 'application/json' } });
    if (got.status !== 200) return { kind: 'refuse', reason: 'connections_failed', detail: `GET /connections answered ${got.status}`, ...(got.requestId ? { requestId: got.requestId } : {}) };
    const parsed = connectionsSchema.safeParse(got.json);
    if (!parsed.success) return { kind: 'refuse', reason: 'bad_response', detail: 'GET /connections did not answer a list of connections', ...(got.requestId ? { requestId: got.requestId } : {}) };
    const orgs: ConnectionChoice[] = parsed.data
      .filter((c) => c.tenantType === undefined || c.tenantType === 'ORGANISATION')
      .map((c) => ({ connection: c.tenantId, connectionId: c.id, ...(c.tenantName ? { name: c.tenantName } : {}) }));
    if (config.xeroTenantId !== undefined) {
      const org = orgs.find((o) => o.connection === config.xeroTenantId);
      if (org !== undefined) return { kind: 'bind', choice: org };
      return {
        kind: 'refuse',
        reason: 'other_organisation',
        detail: `the grant does not include organisation ${config.xeroTenantId} (it has ${orgs.length})`,
        text: 'The access you gave does not include the Xero organisation this link is for. Open the link again and tick that organisation.',
      };
    }
    if (orgs.length === 1) return { kind: 'bind', choice: orgs[0]! };
    if (orgs.length === 0) return { kind: 'refuse', reason: 'no_organisation', detail: 'the grant includes no organisation', text: 'The access you gave includes no Xero organisation.' };
    return { kind: 'pick', choices: orgs };
  },

  async revoke({ config, binding, connection, accessToken, fetch }): Promise<string> {
    const auth = { authorization: `Bearer ${accessToken}`, accept: 'application/json' };
    let id = binding?.connectionId;
    if (id === undefined) {
      const got = await fetch(config.connectionsUrl, { headers: auth });
      const parsed = got.status === 200 ? connectionsSchema.safeParse(got.json) : undefined;
      id = parsed?.success === true ? parsed.data.find((c) => c.tenantId === connection)?.id : undefined;
    }
    if (id === undefined) return 'the organisation was no longer connected';
    const done = await fetch(`${config.connectionsUrl}/${encodeURIComponent(id)}`, { method: 'DELETE', headers: auth });
    if (done.status !== 204 && done.status !== 200 && done.status !== 404) throw new Error(`DELETE /connections/{id} answered ${done.status}${done.requestId ? ` (Xero-Correlation-Id ${done.requestId})` : ''}`);
    return 'revoked';
  },
};
