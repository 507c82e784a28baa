/**
 * The webhook receiver wired to the app (the worker starts it when WEBHOOK_PORT is set): the tenants' secrets, the
 * kept events, the calls queue and the metrics; QuickBooks change notifications request incremental runs. See server.ts for the HTTP side and events.ts for what is kept.
 */
import type { App } from '../app.js';
import { serverLimitsOf } from '../http-server.js';
import { enqueueWebhookEvent, requestSync } from '../queues/index.js';
import { mountApi, type LastDelivery } from '../api/index.js';
import { parseApiKeys } from '../config/api-keys.js';
import { trustProxyOf } from '../config/env.js';
import type { TenantConfig } from '../config/tenants.js';
import { Connect, connectionStates, connectionsOf, mountConnectRoutes } from '../connect/index.js';
import { connectionChangedEvent } from '../notify/events.js';
import { eventIdOf } from './events.js';
import { startWebhookServer, type WebhookServer } from './server.js';

export { WebhookEvents, findRequestMetadata, eventIdOf, type StoredEvent, type WebhookOutcome } from './events.js';
export { MAX_BODY_BYTES, type WebhookServer } from './server.js';

/** How long a run requested by a QuickBooks notification waits for more notifications to join it. */
export const QUICKBOOKS_DEBOUNCE_MS = 5_000;

/**
 * The connect links (src/connect), when PUBLIC_URL and PLATFORM_TOKEN_KEY are set: on this same public server, so
 * they need WEBHOOK_PORT too (decision 0142).
 */
function connectOf(app: App): Connect | undefined {
  const { env } = app;
  if (env.PUBLIC_URL === undefined || env.PLATFORM_TOKEN_KEY === undefined) return undefined;
  return new Connect({
    redis: app.redis,
    prefix: env.KEY_PREFIX,
    tokenKey: env.PLATFORM_TOKEN_KEY,
    previousTokenKey: env.PLATFORM_TOKEN_KEY_PREVIOUS,
    publicUrl: env.PUBLIC_URL,
    tenant: (id) => app.tenant(id),
    tenants: () => app.tenants(),
    requestFullSync: async (id) => void (await requestSync(app.queues.sync, id, 'full', { trigger: 'connect' })),
    logger: app.logger.child({ part: 'connect' }),
    openingsPerMin: env.CONNECT_RATE_PER_MIN,
    onOutcome: (tenant, outcome) => app.metrics?.connectOutcomes.inc({ tenant, outcome }),
    onChanged: (c) => app.notify.emit(connectionChangedEvent({ tenantId: c.tenant, platform: c.platform, state: c.state, connection: c.connection, reason: c.reason, at: c.at })),
  });
}

/** A QuickBooks tenant whose notifications can be verified. */
const hasVerifierToken = (t: TenantConfig): boolean => t.platform.kind === 'quickbooks' && t.platform.webhookVerifierToken !== undefined;

export interface PublicServerOptions {
  port: number;
  host: string;
  quickBooksDebounceMs?: number;
  /** The last outgoing event of a tenant and its delivery, for the API's `lastWebhook` (absent: null). */
  lastDelivery?: (tenantId: string) => Promise<LastDelivery | undefined>;
}

export async function startWebhooks(app: App, o: PublicServerOptions): Promise<WebhookServer> {
  const { env, logger, metrics } = app;
  const count = (tenant: string | undefined, outcome: string): void => metrics?.webhookEvents.inc({ tenant: tenant ?? '(unknown)', outcome });
  const connect = connectOf(app);
  // The control API (src/api) when API_KEYS is set (checked at load: parseApiKeys has no problem left here).
  const keys = env.API_KEYS === undefined ? [] : parseApiKeys(env.API_KEYS).keys;
  const server = await startWebhookServer({
    routes: (hono, unauthorized) => {
      if (connect) mountConnectRoutes(hono, { connect, ratePerMin: env.CONNECT_RATE_PER_MIN, trustProxy: trustProxyOf(env), logger: logger.child({ part: 'connect' }) }, unauthorized);
      if (keys.length === 0) return;
      mountApi(
        hono,
        {
          keys,
          ratePerMin: env.API_RATE_PER_MIN,
          idempotencyMaxPerKey: env.API_IDEMPOTENCY_MAX_PER_KEY,
          // Connect links kept for an Idempotency-Key are sealed as every other secret at rest.
          ...(app.tokenBox !== undefined ? { sealer: app.tokenBox } : {}),
          redis: app.redis,
          prefix: env.KEY_PREFIX,
          stores: app.stores,
          syncQueue: app.queues.sync,
          tenant: (id) => app.tenant(id),
          tenants: () => app.tenants(),
          // Connection states with the keys, so a chain they cannot decrypt shows as needs_reconnect.
          connections: (tenants) => connectionStates(app.redis, env.KEY_PREFIX, tenants, { keys: env }),
          ...(connect
            ? {
                connect: {
                  link: (tenant, lo) => connect.link(tenant, lo),
                  links: (tenant) => connect.links.list(tenant),
                  revokeLink: (tenant, id) => connect.links.revoke(tenant, id),
                  redirectUri: connect.redirectUri,
                },
              }
            : {}),
          // The run webhooks' last delivery attempt (src/state/deliveries.ts), its time as ISO.
          lastDelivery:
            o.lastDelivery ??
            (async (id) => {
              const d = await app.stores.deliveries.last(id);
              return d === undefined ? undefined : { ...d, at: new Date(d.at).toISOString() };
            }),
          logger: logger.child({ part: 'api' }),
          onRequest: (e) => metrics?.apiRequests.inc({ key: e.key, route: e.route, status: String(e.status) }),
        },
        unauthorized,
      );
    },
    port: o.port,
    host: o.host,
    signatureHeader: env.WEBHOOK_SIGNATURE_HEADER,
    ratePerMin: env.WEBHOOK_RATE_PER_MIN,
    limits: serverLimitsOf(env),
    logger: logger.child({ part: 'webhooks' }),
    secretOf: (id) => app.tenant(id)?.calls.webhookSecret,
    async accept(tenant, body, raw) {
      const { id, idFrom } = eventIdOf(body, raw);
      const receivedAt = Date.now();
      const { duplicate } = await app.webhookEvents.record(tenant, { id, idFrom, body }, receivedAt);
      // Enqueued even for a duplicate: a crash between keeping and enqueueing is mended by the redelivery; the job
      // id (per tenant and event) and the event's recorded outcome keep the work to once.
      await enqueueWebhookEvent(app.queues.calls, tenant, id, receivedAt);
      return { eventId: id, duplicate };
    },
    quickbooks: {
      listening: () => app.tenants().some(hasVerifierToken),
      // The realm is the tenants file's, else the one a connect link bound (one Redis read per such tenant).
      tenants: async () => {
        const listening = app.tenants().filter(hasVerifierToken);
        const realms = await connectionsOf(app.redis, env.KEY_PREFIX, listening);
        return listening.flatMap((t) => {
          const realmId = realms.get(t.id);
          const verifierToken = t.platform.kind === 'quickbooks' ? t.platform.webhookVerifierToken : undefined;
          return realmId !== undefined && verifierToken !== undefined ? [{ id: t.id, realmId, verifierToken }] : [];
        });
      },
      // Debounced: the run waits a few seconds, and notifications meanwhile join it (one queued run per tenant).
      requestSync: async (id) => void (await requestSync(app.queues.sync, id, 'incremental', { trigger: 'webhook', delayMs: o.quickBooksDebounceMs ?? QUICKBOOKS_DEBOUNCE_MS })),
    },
    onQuickBooks: (tenant, outcome) => count(tenant, outcome),
    onRefused: (tenant) => count(tenant, 'refused'),
    onAccepted: (tenant, r) => {
      if (r.duplicate) count(tenant, 'duplicate');
    },
  });
  if (env.PUBLIC_URL !== undefined && env.PLATFORM_TOKEN_KEY === undefined) logger.warn('PUBLIC_URL is set but PLATFORM_TOKEN_KEY is not: connect links are off (they are signed with a key derived from it)');
  if (keys.length > 0) logger.info({ keys: keys.map((k) => k.name) }, 'control API served on the public server under /v1');
  if (connect === undefined) return server;
  logger.info({ redirectUri: connect.redirectUri }, 'connect links served on the public server');
  return { port: server.port, close: async () => void (await Promise.allSettled([server.close(), connect.close()])) };
}
