/**
 * The public server composed (the worker starts it when WEBHOOK_PORT is set): the webhook receiver (src/webhooks)
 * with the tenants' secrets, the kept events, the calls queue and the metrics; the platforms' change-notification
 * routes, one per platform module that has one (they request incremental runs); the connect links (src/connect);
 * the control API (src/api).
 */
import type { App } from '../app.js';
import { serverLimitsOf } from '../http-server.js';
import { enqueueWebhookEvent, redeliverNotify, requestSync } from '../queues/index.js';
import { mountApi, type LastDelivery } from '../api/index.js';
import { mountConsole } from '../console/index.js';
import { parseApiKeys } from '../config/api-keys.js';
import { trustProxyOf } from '../config/env.js';
import { parseNetworks } from '../config/networks.js';
import { notifyTargetOf, type TenantConfig } from '../config/tenants.js';
import { Connect, connectionStates, connectionsOf, mountConnectRoutes } from '../connect/index.js';
import { AddressGuard, BlockedAddressError, deliverEvent } from '../notify/index.js';
import { connectionChangedEvent, webhookTestEvent } from '../notify/events.js';
import { packageVersion } from '../version.js';
import { MODULES } from '../platforms/registry.js';
import { eventIdOf, startWebhookServer, type PlatformRoute, type WebhookServer } from '../webhooks/index.js';

/** How long a run requested by a platform's notification waits for more notifications to join it. */
export const NOTICE_DEBOUNCE_MS = 5_000;

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

/**
 * The change-notification routes of the platforms that have one: served while a tenant of that platform gives the
 * route its secret; a body is verified against those tenants, each with its connection (the tenants file's, else
 * the one a connect link bound: one Redis read per such tenant).
 */
function platformRoutes(app: App, debounceMs: number): PlatformRoute[] {
  const { env } = app;
  return MODULES.flatMap((m): PlatformRoute[] => {
    const hook = m.webhook;
    if (hook === undefined) return [];
    const listeners = (): TenantConfig[] => app.tenants().filter((t) => t.platform.kind === m.kind && hook.secretOf(t.platform) !== undefined);
    return [
      {
        path: hook.path,
        label: m.label,
        maxBodyBytes: hook.maxBodyBytes,
        signatureHeader: hook.signatureHeader,
        listening: () => listeners().length > 0,
        verify: async (body, signature) => {
          const listening = listeners();
          const connections = await connectionsOf(app.redis, env.KEY_PREFIX, listening);
          const tenants = listening.flatMap((t) => {
            const connection = connections.get(t.id);
            return connection === undefined ? [] : [{ id: t.id, config: t.platform, connection }];
          });
          return hook.handle(body, signature, tenants);
        },
        // Debounced: the run waits a few seconds, and notifications meanwhile join it (one queued run per tenant).
        requestSync: async (id) => void (await requestSync(app.queues.sync, id, 'incremental', { trigger: 'webhook', delayMs: debounceMs })),
      },
    ];
  });
}

/**
 * The outbound rule of a tenant created over the API: https to a host whose addresses are public, unless
 * OUTBOUND_ALLOWED_NETWORKS lists them (the rule notify URLs follow at each connection), where http is allowed too
 * (decision 0201).
 */
function outboundCheckOf(guard: AddressGuard): (url: string) => Promise<string | undefined> {
  return async (text) => {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      return 'not a URL';
    }
    let address: string;
    try {
      address = await guard.resolve(url.hostname);
    } catch (err) {
      // A name that does not resolve now may later: only an address known to be inside is refused.
      if (err instanceof BlockedAddressError) return `${url.hostname}: ${err.message}`;
      return url.protocol === 'https:' ? undefined : 'must be https:// for a tenant created over the API';
    }
    // Plain http only inside a network the operator listed (a receiver on premises, this machine in a test).
    if (url.protocol !== 'https:' && !guard.listed(address)) return 'must be https:// for a tenant created over the API (http only to OUTBOUND_ALLOWED_NETWORKS)';
    return undefined;
  };
}

export interface PublicServerOptions {
  port: number;
  host: string;
  /** How long a run a platform's notification requests waits for more to join it (default NOTICE_DEBOUNCE_MS). */
  noticeDebounceMs?: number;
  /** The last outgoing event of a tenant and its delivery, for the API's `lastWebhook` (absent: null). */
  lastDelivery?: (tenantId: string) => Promise<LastDelivery | undefined>;
}

export async function startPublicServer(app: App, o: PublicServerOptions): Promise<WebhookServer> {
  const { env, logger, metrics } = app;
  const count = (tenant: string | undefined, outcome: string): void => metrics?.webhookEvents.inc({ tenant: tenant ?? '(unknown)', outcome });
  const connect = connectOf(app);
  // What a tenant's own addresses may reach (OUTBOUND_ALLOWED_NETWORKS): checked when one is created, and at a test delivery.
  const guard = new AddressGuard(parseNetworks(env.OUTBOUND_ALLOWED_NETWORKS ?? '').networks);
  // The control API (src/api) when API_KEYS is set (checked at load: parseApiKeys has no problem left here).
  const keys = env.API_KEYS === undefined ? [] : parseApiKeys(env.API_KEYS).keys;
  const server = await startWebhookServer({
    routes: (hono, unauthorized) => {
      if (connect) mountConnectRoutes(hono, { connect, ratePerMin: env.CONNECT_RATE_PER_MIN, trustProxy: trustProxyOf(env), logger: logger.child({ part: 'connect' }) }, unauthorized);
      if (keys.length === 0) return;
      const api = mountApi(
        hono,
        {
          keys,
          ratePerMin: env.API_RATE_PER_MIN,
          idempotencyMaxPerKey: env.API_IDEMPOTENCY_MAX_PER_KEY,
          // Connect links kept for an Idempotency-Key are sealed as every other secret at rest.
          ...(app.tokenBox !== undefined ? { sealer: app.tokenBox } : {}),
          redis: app.redis,
          prefix: env.KEY_PREFIX,
          publicUrl: env.PUBLIC_URL,
          stores: app.stores,
          syncQueue: app.queues.sync,
          tenant: (id) => app.tenant(id),
          tenants: () => app.tenants(),
          tenantStore: app.tenantStore,
          sourceOf: (id) => app.sourceOf(id),
          platformEnv: { FILE_PLATFORM_ROOT: env.FILE_PLATFORM_ROOT, PLATFORM_TOKEN_KEY: env.PLATFORM_TOKEN_KEY },
          outboundCheck: outboundCheckOf(guard),
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
          // Events: the log, tenant.* events through the app's sink, redelivery on the notify queue, a test sent now.
          events: app.events,
          notify: app.notify,
          hasReceiver: (id) => notifyTargetOf(env, app.tenant(id)) !== undefined,
          redeliver: (event) => redeliverNotify(app.queues.notify, event, env.NOTIFY_ATTEMPTS),
          testWebhook: async (id) => {
            const target = notifyTargetOf(env, app.tenant(id));
            if (target === undefined) return undefined;
            const event = webhookTestEvent(id);
            const r = await deliverEvent(event, target, { timeoutMs: env.NOTIFY_TIMEOUT_MS, userAgent: `collections-sync/${packageVersion()}`, guard });
            return { eventId: event.id, ...r };
          },
          // The run webhooks' last delivery attempt (src/state/deliveries.ts), its time as ISO.
          lastDelivery:
            o.lastDelivery ??
            (async (id) => {
              const d = await app.stores.deliveries.last(id);
              return d === undefined ? undefined : { ...d, at: new Date(d.at).toISOString() };
            }),
          // DELETE /v1/tenants/{id}/connection: `connect revoke`'s code, its connection.changed event through the app's sink.
          revokeConnection: async (id, by) =>
            env.PLATFORM_TOKEN_KEY === undefined
              ? undefined
              : (await import('../connect/index.js')).revokeConnection(
                  {
                    redis: app.redis,
                    prefix: env.KEY_PREFIX,
                    tokenKey: env.PLATFORM_TOKEN_KEY,
                    previousTokenKey: env.PLATFORM_TOKEN_KEY_PREVIOUS,
                    ...(env.PUBLIC_URL !== undefined ? { publicUrl: env.PUBLIC_URL } : {}),
                    tenants: app.tenants(),
                    logger: logger.child({ part: 'connect' }),
                    by,
                    onChanged: (ch) => app.notify.emit(connectionChangedEvent({ tenantId: ch.tenant, platform: ch.platform, state: ch.state, connection: ch.connection, reason: ch.reason, at: ch.at })),
                  },
                  id,
                ),
          logger: logger.child({ part: 'api' }),
          onRequest: (e) => metrics?.apiRequests.inc({ key: e.key, route: e.route, status: String(e.status) }),
        },
        unauthorized,
      );
      // The operator's console: pages over the same API, signed in with the same keys.
      mountConsole(hono, {
        keys,
        api,
        redis: app.redis,
        prefix: env.KEY_PREFIX,
        sessionS: env.CONSOLE_SESSION_S,
        secure: env.PUBLIC_URL?.startsWith('https:') === true,
        trustProxy: trustProxyOf(env),
        logger: logger.child({ part: 'console' }),
      });
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
    platformRoutes: platformRoutes(app, o.noticeDebounceMs ?? NOTICE_DEBOUNCE_MS),
    onPlatformNotice: (_path, tenant, outcome) => count(tenant, outcome),
    onRefused: (tenant) => count(tenant, 'refused'),
    onAccepted: (tenant, r) => {
      if (r.duplicate) count(tenant, 'duplicate');
    },
  });
  if (env.PUBLIC_URL !== undefined && env.PLATFORM_TOKEN_KEY === undefined) logger.warn('PUBLIC_URL is set but PLATFORM_TOKEN_KEY is not: connect links are off (they are signed with a key derived from it)');
  if (keys.length > 0) logger.info({ keys: keys.map((k) => k.name) }, 'control API served on the public server under /v1, the console under /console');
  if (connect === undefined) return server;
  logger.info({ redirectUri: connect.redirectUri }, 'connect links served on the public server');
  return { port: server.port, close: async () => void (await Promise.allSettled([server.close(), connect.close()])) };
}
