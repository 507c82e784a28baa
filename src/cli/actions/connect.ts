/** `connect link|revoke-link|status|revoke` (the commands: ../commands/connect.ts; the room: src/connect). */
import { parseDuration } from '../../config/duration.js';
import { OAUTH_KINDS } from '../../platforms/registry.js';
import { openRuntime, openStateRuntime, out, outJson, requireTenant, UsageError, warn } from '../runtime.js';
import { ago } from './status.js';

const MAX_LINK_MS = 30 * 86_400_000;

export async function link(o: { tenant: string; expires: string; reconnect?: boolean; json?: boolean }): Promise<void> {
  const ttl = parseDuration(o.expires);
  if (ttl === undefined || ttl > MAX_LINK_MS) throw new UsageError(`--expires must be a duration up to 30d, such as 2h or 7d (got "${o.expires}")`);
  const [{ loadEnv, ConfigError }, { makeConnectLink, LinkRefusedError }] = await Promise.all([import('../../config/env.js'), import('../../connect/index.js')]);
  const env = loadEnv();
  if (env.PUBLIC_URL === undefined) throw new ConfigError('connect links need PUBLIC_URL: the public server\'s outside address (https://...), where WEBHOOK_PORT is reached');
  if (env.PLATFORM_TOKEN_KEY === undefined) throw new ConfigError('connect links need PLATFORM_TOKEN_KEY (links are signed with a key derived from it)');
  // The state runtime (one Redis connection, no queues): a link is checked against the tenant's connection and recorded.
  const rt = await openStateRuntime();
  try {
    let made;
    try {
      made = await makeConnectLink(
        { redis: rt.app.redis, prefix: rt.env.KEY_PREFIX, tokenKey: env.PLATFORM_TOKEN_KEY, publicUrl: env.PUBLIC_URL, tenant: rt.app.tenant(o.tenant) },
        o.tenant,
        { ttlMs: ttl, reconnect: o.reconnect === true, by: 'cli' },
      );
    } catch (err) {
      if (err instanceof LinkRefusedError) throw new UsageError(`${err.message} (--reconnect); nothing was made`);
      throw err;
    }
    const expiresAt = new Date(made.expiresAt).toISOString();
    if (o.json) return outJson({ tenant: o.tenant, linkId: made.id, url: made.url, expiresAt, reconnect: made.reconnect, redirectUri: `${env.PUBLIC_URL}/oauth/callback` });
    out(made.url);
    warn(
      `link ${made.id}${made.reconnect ? ' (reconnect)' : ''}: works once, until ${expiresAt}, for tenant ${o.tenant} only; send it to the customer ` +
        `(revoke it: collections-sync connect revoke-link ${made.id} --tenant ${o.tenant}; register ${env.PUBLIC_URL}/oauth/callback as the app's redirect URI)`,
    );
    return undefined;
  } finally {
    rt.app.close();
  }
}

export async function revokeLink(id: string, o: { tenant: string; json?: boolean }): Promise<void> {
  const { LinkStore, LINK_ID } = await import('../../connect/index.js');
  if (!LINK_ID.test(id)) throw new UsageError(`"${id}" is not a link id (12 characters: letters, digits, _ and -, as \`connect link\` printed it)`);
  const rt = await openStateRuntime();
  try {
    requireTenant(rt.app, o.tenant);
    const revoked = await new LinkStore(rt.app.redis, rt.env.KEY_PREFIX).revoke(o.tenant, id);
    if (!revoked) throw new UsageError(`${o.tenant} has no outstanding connect link ${id} (used, revoked, expired or never made; \`connect status --tenant ${o.tenant}\` lists the outstanding ones)`);
    if (o.json) return outJson({ tenant: o.tenant, linkId: id, revoked: true });
    out(`${o.tenant}: link ${id} revoked`);
    return undefined;
  } finally {
    rt.app.close();
  }
}

/** Exit 0 when every tenant shown is connected, 1 when one awaits a connection or needs a reconnect. */
export async function status(o: { tenant?: string; json?: boolean }): Promise<number> {
  const { connectionStates, LinkStore } = await import('../../connect/index.js');
  const rt = await openRuntime('producer');
  try {
    const tenants = o.tenant ? [requireTenant(rt.app, o.tenant)] : rt.app.tenants();
    const store = new LinkStore(rt.app.redis, rt.env.KEY_PREFIX);
    const reports = await Promise.all(
      (await connectionStates(rt.app.redis, rt.env.KEY_PREFIX, tenants, { keys: rt.env })).map(async (r) => ({
        ...r,
        links: (await store.list(r.tenant)).map((l) => ({ id: l.id, expiresAt: new Date(l.expiresAt).toISOString(), reconnect: l.reconnect, createdAt: new Date(l.createdAt).toISOString(), by: l.by })),
      })),
    );
    if (o.tenant && reports.length === 0) throw new UsageError(`tenant "${o.tenant}" is not a tenant of a platform connected with a link (${OAUTH_KINDS.join(', ')}): it has no connection`);
    if (o.json) outJson(reports);
    else if (reports.length === 0) out(`no tenants of a platform connected with a link (${OAUTH_KINDS.join(', ')})`);
    for (const r of o.json ? [] : reports) {
      const what = r.connection ? ` ${r.platform} ${r.name ? `${r.name} (${r.connection})` : r.connection}` : ` ${r.platform}`;
      if (r.state === 'connected') {
        const age = r.refreshTokenAgeDays === undefined ? '' : `, refresh token ${r.refreshTokenAgeDays} days old`;
        out(`${r.tenant}: connected${what}${r.connectedAt ? ` since ${ago(r.connectedAt)}` : ''} (via ${r.via ?? 'link'}${age})`);
        if (r.ageing) out(`  warning: the refresh token nears the platform's idle expiry; ${r.next ?? ''}`);
        if (r.reason) out(`  ${r.reason}`);
        if (r.previousKey) out('  sealed with PLATFORM_TOKEN_KEY_PREVIOUS: it moves to PLATFORM_TOKEN_KEY at its next use (any run)');
      } else if (r.state === 'awaiting_connection') {
        out(`${r.tenant}: awaiting connection${what}: ${r.next ?? ''}`);
      } else {
        out(`${r.tenant}: needs reconnect${what}: ${r.reason ?? ''}; ${r.next ?? ''}`);
      }
      for (const l of r.links) out(`  link ${l.id}${l.reconnect ? ' (reconnect)' : ''} outstanding until ${l.expiresAt}, made by ${l.by}: collections-sync connect revoke-link ${l.id} --tenant ${r.tenant} withdraws it`);
    }
    return reports.every((r) => r.state === 'connected') ? 0 : 1;
  } finally {
    await rt.close();
  }
}

export async function revoke(o: { tenant: string; yes?: boolean; json?: boolean }): Promise<void> {
  if (!o.yes) throw new UsageError(`revoking ends ${o.tenant}'s connection at the platform; nothing was changed: add --yes to revoke`);
  const [{ revokeConnection }, { connectionChangedEvent }] = await Promise.all([import('../../connect/index.js'), import('../../notify/events.js')]);
  const rt = await openRuntime('producer');
  try {
    requireTenant(rt.app, o.tenant);
    if (rt.env.PLATFORM_TOKEN_KEY === undefined) throw new UsageError('revoking needs PLATFORM_TOKEN_KEY (the token chain is encrypted with it)');
    const outcome = await revokeConnection(
      {
        redis: rt.app.redis,
        prefix: rt.env.KEY_PREFIX,
        tokenKey: rt.env.PLATFORM_TOKEN_KEY,
        previousTokenKey: rt.env.PLATFORM_TOKEN_KEY_PREVIOUS,
        ...(rt.env.PUBLIC_URL ? { publicUrl: rt.env.PUBLIC_URL } : {}),
        tenants: rt.app.tenants(),
        logger: rt.app.logger,
        // The CLI has the queues: it enqueues the `connection.changed` event itself (a worker delivers it).
        onChanged: (c) => rt.app.notify.emit(connectionChangedEvent({ tenantId: c.tenant, platform: c.platform, state: c.state, connection: c.connection, reason: c.reason, at: c.at })),
      },
      o.tenant,
    );
    if (o.json) return outJson(outcome);
    const links = outcome.linksRevoked > 0 ? `; ${outcome.linksRevoked} outstanding link${outcome.linksRevoked === 1 ? '' : 's'} revoked` : '';
    if (!outcome.chainDeleted) return out(`${o.tenant}: not connected; nothing to revoke${links}`);
    out(`${o.tenant}: ${outcome.connection ?? ''} ${outcome.platform === 'revoked' ? 'revoked at the platform' : `platform ${outcome.platform}`}; token chain deleted${links} (collections-sync connect link --tenant ${o.tenant} makes a new link)`);
    return undefined;
  } finally {
    await rt.close();
  }
}
