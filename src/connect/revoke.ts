/**
 * `connect revoke`: tells the platform (its module's `revoke`: Xero `DELETE /connections/{id}` with an access token of
 * the chain; Intuit its revoke endpoint), then deletes the token chain (under its lock) and the binding, and revokes the
 * tenant's outstanding connect links (a revoked connection is not reopened by a link sent before). A platform that
 * cannot be told (the grant already gone, the endpoint down) does not keep the chain: it is deleted all the same, and
 * the outcome says what the platform answered.
 */
import type { Redis } from 'ioredis';
import type { TenantConfig } from '../config/tenants.js';
import type { Logger } from '../logger.js';
import { BindingStore } from '../platforms/oauth/binding.js';
import { TokenCipher } from '../platforms/oauth/cipher.js';
import { Connect, type ConnectionChange } from './connect.js';
import { oauthOf } from '../platforms/registry.js';
import { LinkStore } from './links.js';
import { connectionOf } from './status.js';

export interface RevokeOutcome {
  tenant: string;
  connection?: string;
  /** What the platform said: `revoked`, `not connected`, or why it was not told. */
  platform: string;
  chainDeleted: boolean;
  /** Outstanding connect links of the tenant revoked with it. */
  linksRevoked: number;
}

export async function revokeConnection(
  d: {
    redis: Redis;
    prefix: string;
    tokenKey: string;
    previousTokenKey?: string | undefined;
    publicUrl?: string;
    tenants: readonly TenantConfig[];
    logger: Logger;
    onChanged?(change: ConnectionChange): Promise<void>;
    /** Who revokes, for the event's reason and the log (the API's `api:<key name>`; absent: the CLI). */
    by?: string;
  },
  tenantId: string,
): Promise<RevokeOutcome> {
  const tenant = d.tenants.find((t) => t.id === tenantId);
  if (tenant === undefined) throw new Error(`no tenant "${tenantId}" in the tenants file`);
  const p = tenant.platform;
  const m = oauthOf(p);
  if (m === undefined) throw new Error(`tenant "${tenantId}" is a ${p.kind} tenant: only an OAuth platform's tenants have a connection to revoke`);
  const bindings = new BindingStore(d.redis, d.prefix);
  const binding = await bindings.get(tenantId);
  const connection = connectionOf(tenant, binding);
  const linksRevoked = await new LinkStore(d.redis, d.prefix).revokeAll(tenantId);
  if (connection === undefined) return { tenant: tenantId, platform: 'not connected', chainDeleted: false, linksRevoked };
  const connect = new Connect({
    redis: d.redis,
    prefix: d.prefix,
    tokenKey: d.tokenKey,
    previousTokenKey: d.previousTokenKey,
    publicUrl: d.publicUrl ?? 'https://unused.invalid',
    tenant: (id) => d.tenants.find((t) => t.id === id),
    tenants: () => d.tenants,
    requestFullSync: async () => undefined,
    logger: d.logger,
  });
  const auth = connect.authFor(tenant, connection, binding);
  let told: string;
  try {
    const { token } = await auth.accessToken();
    // The chain's refresh token, for a platform whose revoke call takes it (Zoho revokes the refresh token itself).
    const stored = await auth.store.read();
    const cipher = TokenCipher.fromText(d.tokenKey, d.previousTokenKey);
    const refreshToken = stored === undefined ? undefined : cipher.decrypt(stored.state.cur, m.oauth.chain.context(connection, 'refresh'));
    const revoke = m.oauth.revoke;
    told = revoke === undefined
      ? 'not told: the platform has no revoke call (disconnect the app there)'
      : await revoke({ config: p, binding, connection, clientSecret: m.oauth.credentials(p).clientSecret, accessToken: token, refreshToken, fetch: connect.fetchFor({ ...tenant, oauth: m.oauth }) });
  } catch (err) {
    told = `not told: ${(err as Error).message}`;
  }
  await auth.disconnect();
  await bindings.remove(tenantId);
  await connect.close();
  await d.onChanged?.({ tenant: tenantId, platform: p.kind, state: 'revoked', connection, at: Date.now(), reason: `connect revoke${d.by !== undefined ? ` by ${d.by}` : ''}; platform: ${told}` });
  d.logger.info({ tenant: tenantId, connection, platform: told, linksRevoked, ...(d.by !== undefined ? { by: d.by } : {}) }, 'connect: connection revoked and its token chain deleted');
  return { tenant: tenantId, connection, platform: told, chainDeleted: true, linksRevoked };
}
