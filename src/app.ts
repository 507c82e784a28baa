/**
 * The composition root (docs/development.md, "Project layout"): builds Redis connections, queues, stores, the token protocol, the
 * collections clients and platform adapters once, and hands them down. Nothing else connects or reads the
 * environment. The worker, the CLI, the demo and tests all start here.
 */
import { hkdfSync } from 'node:crypto';
import { Agent } from 'undici';
import type { Redis } from 'ioredis';
import { createAuth, type Auth, type AuthMetrics, type RefresherHooks } from './auth/index.js';
import { CollectionsClient, type RequestEvent } from './collections/index.js';
import type { Env } from './config/env.js';
import { checkTenantsNeeds, notifyTargetOf, type TenantConfig, type TenantsFile } from './config/tenants.js';
import type { Logger } from './logger.js';
import type { Metrics } from './ops/metrics.js';
import { connectionStates } from './connect/status.js';
import { connectionChangedEvent, type EventSink, type NotifyEvent } from './notify/events.js';
import { createAdapter } from './platforms/index.js';
import { oauthOf } from './platforms/registry.js';
import { TokenCipher } from './platforms/oauth/index.js';
import type { MemoryPlatformRegistry } from './platforms/memory/index.js';
import type { PlatformAdapter } from './platforms/types.js';
import { closeQueues, createQueues, notifyJobs, refreshJobs, type Queues } from './queues/index.js';
import { connectRedis, createRedis, evictionWarning, redisTargetOf } from './redis/connection.js';
import { isConnectionError, RedisOutageLog } from './redis/outage.js';
import { EventLog } from './state/event-log.js';
import { TenantFlags } from './state/flags.js';
import { createStateStores, type StateStores } from './state/index.js';
import { RecordMirror } from './state/record-mirror.js';
import { TenantStore } from './state/tenant-store.js';
import { WebhookEvents } from './webhooks/events.js';

export interface AppOptions {
  env: Env;
  tenants: TenantsFile;
  logger: Logger;
  /** `worker`: retries Redis forever; `producer` (CLI): fails fast when Redis is unreachable. */
  role: 'worker' | 'producer';
  metrics?: Metrics;
  memoryPlatforms?: MemoryPlatformRegistry;
  authHooks?: RefresherHooks;
  /** Ends a worker's wait for Redis at once when aborted (a signal while starting, issue 28). */
  signal?: AbortSignal;
}

export interface App {
  readonly env: Env;
  readonly logger: Logger;
  readonly redis: Redis;
  readonly queues: Queues;
  readonly stores: StateStores;
  readonly mirror: RecordMirror;
  readonly flags: TenantFlags;
  readonly auth: Auth;
  readonly metrics: Metrics | undefined;
  /** Where every Redis connection of the process reports connection errors (logged once per outage). */
  readonly outage: RedisOutageLog;
  /** Call webhook events as received, bounded (src/webhooks). */
  readonly webhookEvents: WebhookEvents;
  /**
   * Run webhooks: records every event in the event log and enqueues its delivery when its tenant has a receiver
   * (docs/run-webhooks.md); never throws.
   */
  readonly notify: EventSink;
  /** The run webhooks' event log (`GET /v1/events`), bounded by EVENTS_KEEP_MAX and EVENTS_KEEP_DAYS. */
  readonly events: EventLog;
  /** The token cipher of PLATFORM_TOKEN_KEY (secrets at rest, bound to their Redis key), or undefined without the key. */
  readonly tokenBox: TokenCipher | undefined;
  /** Tenants created over the API (src/state/tenant-store.ts), as this process last read them. */
  readonly tenantStore: TenantStore;
  /** A tenant of the tenants file, else one created over the API (the file's wins an id both have). */
  tenant(id: string): TenantConfig | undefined;
  /** The tenants of the file, then those created over the API (by id). */
  tenants(): readonly TenantConfig[];
  /** Where a tenant comes from: `file` (read-only over the API), `api`, or undefined for none. */
  sourceOf(id: string): 'file' | 'api' | undefined;
  /** Replaces the tenants (the tenants file changed); clients and adapters of changed tenants are rebuilt. */
  setTenants(file: TenantsFile): void;
  clientFor(tenant: TenantConfig): CollectionsClient;
  adapterFor(tenant: TenantConfig): PlatformAdapter;
  /**
   * Marks a tenant in use (a job of it running) until the returned function is called: its client, adapter and token
   * provider are not dropped meanwhile, however long the job takes.
   */
  hold(tenantId: string): () => void;
  /**
   * Drops the client, adapter and token provider of every tenant not held and not asked for since `now` less
   * TENANT_IDLE_S (the worker does so on a timer); returns the tenants dropped. They are made again when next asked for.
   */
  dropIdle(now?: number): string[];
  /** How many tenants have a client, an adapter, a token provider made now (what idle tenants must not hold). */
  tenantObjects(): { clients: number; adapters: number; providers: number };
  close(): Promise<void>;
}

function authMetricsOf(metrics: Metrics | undefined): AuthMetrics | undefined {
  if (!metrics) return undefined;
  return {
    rotation: (client, reason) => metrics.rotations.inc({ client, reason }),
    unauthorized: (reason) => metrics.unauthorized.inc({ reason }),
    gateWaitMs: (ms) => metrics.gateWaitSeconds.observe(ms / 1000),
  };
}

/**
 * The key of the client secrets' fingerprints (decision 36): TOKEN_FINGERPRINT_KEY, else one derived from
 * PLATFORM_TOKEN_KEY (HKDF, its own label), else none (createAuth then takes a random key of this process).
 */
export function fingerprintKeyOf(env: Pick<Env, 'TOKEN_FINGERPRINT_KEY' | 'PLATFORM_TOKEN_KEY'>): { fingerprintKey?: Buffer } {
  if (env.TOKEN_FINGERPRINT_KEY !== undefined) return { fingerprintKey: Buffer.from(env.TOKEN_FINGERPRINT_KEY, 'utf8') };
  if (env.PLATFORM_TOKEN_KEY !== undefined) {
    return { fingerprintKey: Buffer.from(hkdfSync('sha256', Buffer.from(env.PLATFORM_TOKEN_KEY, 'utf8'), Buffer.alloc(0), 'collections-sync client secret fingerprint', 32)) };
  }
  return {};
}

export async function createApp(options: AppOptions): Promise<App> {
  const { env, logger, metrics } = options;
  checkTenantsNeeds(options.tenants, env);
  const target = redisTargetOf(env);
  const redis = await connectRedis(createRedis(target, options.role), target, {
    waitMs: options.role === 'worker' ? 60_000 : 0,
    onRetry: (err) => logger.warn({ err: err.message }, 'waiting for Redis'),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const outage = new RedisOutageLog(redis, logger, { repeatMs: env.REDIS_DOWN_LOG_EVERY_S * 1000 });
  redis.on('error', (err: Error) => {
    if (!isConnectionError(err)) logger.warn({ err: err.message }, 'redis connection error');
  });
  const eviction = await evictionWarning(redis);
  if (eviction !== undefined) logger.warn({ redis: target.display }, eviction);
  const queues = createQueues(redis, env.KEY_PREFIX, logger, (queue, err) => outage.report(queue, err), env.QUEUE_EVENTS_KEPT);
  const stores = createStateStores(redis, env.KEY_PREFIX);
  const mirror = new RecordMirror(redis, env.KEY_PREFIX);
  const flags = new TenantFlags(redis, env.KEY_PREFIX);
  const webhookEvents = new WebhookEvents(redis, env.KEY_PREFIX, { maxCount: env.WEBHOOK_EVENTS_MAX, maxAgeMs: env.WEBHOOK_EVENTS_MAX_AGE_DAYS * 86_400_000 });
  const authMetrics = authMetricsOf(metrics);
  // PLATFORM_TOKEN_KEY (and PLATFORM_TOKEN_KEY_PREVIOUS during a rotation): one cipher for every secret at rest.
  const tokenBox = TokenCipher.fromKeys(env);
  const auth = createAuth({
    redis,
    prefix: env.KEY_PREFIX,
    authUrl: env.COLLECTIONS_AUTH_URL,
    jobs: refreshJobs(queues.refreshToken, logger),
    ...fingerprintKeyOf(env),
    // The service token is sealed at rest with the platform tokens' cipher when there is a key (decision 0121).
    ...(tokenBox !== undefined ? { tokenBox } : {}),
    logger,
    settings: {
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      lifetimeMs: env.TOKEN_LIFETIME_S * 1000,
      marginFraction: env.TOKEN_REFRESH_MARGIN,
      scheduleEveryMs: env.TOKEN_CHECK_EVERY_S * 1000,
      inFlightLimit: env.TENANT_INFLIGHT_LIMIT,
    },
    ...(authMetrics ? { metrics: authMetrics } : {}),
    ...(options.authHooks ? { hooks: options.authHooks } : {}),
    onConnectionError: (err) => outage.report('auth', err),
  });
  const agent = new Agent({
    keepAliveTimeout: 30_000,
    connect: { timeout: env.HTTP_CONNECT_TIMEOUT_MS },
    headersTimeout: env.HTTP_HEADERS_TIMEOUT_MS,
    bodyTimeout: env.HTTP_BODY_TIMEOUT_MS,
    connections: 256,
  });

  let byId = new Map<string, TenantConfig>(options.tenants.tenants.map((t) => [t.id, t]));
  const clients = new Map<string, { config: TenantConfig; client: CollectionsClient }>();
  const adapters = new Map<string, { config: TenantConfig; adapter: PlatformAdapter }>();
  // When each tenant's objects were last asked for, and the tenants a running job holds (issue 40: idle tenants hold none).
  const usedAt = new Map<string, number>();
  const holds = new Map<string, number>();
  const idleMs = env.TENANT_IDLE_S * 1000;
  const dropIdle = (now = Date.now()): string[] => {
    const dropped: string[] = [];
    for (const [id, at] of usedAt) {
      if (holds.has(id) || now - at < idleMs) continue;
      usedAt.delete(id);
      clients.delete(id);
      const a = adapters.get(id);
      adapters.delete(id);
      void a?.adapter.close?.();
      auth.forget(id);
      dropped.push(id);
    }
    return dropped;
  };
  const sweep = setInterval(() => dropIdle(), Math.min(60_000, Math.max(1_000, idleMs / 2)));
  sweep.unref();
  const tenantStore = new TenantStore(redis, env.KEY_PREFIX, tokenBox, {
    logger,
    // A stored tenant changed or went: its client and adapter are made again from its new config when next asked for.
    onChange: (id) => {
      clients.delete(id);
      const a = adapters.get(id);
      adapters.delete(id);
      void a?.adapter.close?.();
    },
  });
  await tenantStore.refresh();
  const lookup = (id: string): TenantConfig | undefined => byId.get(id) ?? tenantStore.get(id)?.config;
  const onRequest = metrics
    ? (e: RequestEvent): void => {
        // The client's route names the method ("POST /contact"); the metric has a label for it.
        const route = e.route.startsWith(`${e.method} `) ? e.route.slice(e.method.length + 1) : e.route;
        metrics.httpRequests.inc({ route, method: e.method, status: String(e.status) });
        metrics.httpSeconds.observe({ route, method: e.method }, e.durationMs / 1000);
      }
    : undefined;

  // A tenant unknown (deleted: its tenant.deleted) has the fleet's receiver, if there is one.
  const wanted = (id: string): boolean => notifyTargetOf(env, lookup(id)) !== undefined;
  const queued = notifyJobs(queues.notify, { attempts: env.NOTIFY_ATTEMPTS, wanted, logger });
  const events = new EventLog(redis, env.KEY_PREFIX, { maxCount: env.EVENTS_KEEP_MAX, maxAgeMs: env.EVENTS_KEEP_DAYS * 86_400_000 });
  // Every event is recorded in the log, receiver or not (decision 0220), then queued for its receiver: recorded
  // first, so a delivery's state always has its event to be written beside.
  const notify: EventSink = {
    async emit(event: NotifyEvent) {
      const receiver = wanted(event.data.tenantId);
      try {
        await events.record(event, receiver ? { state: 'pending', attempts: 0 } : { state: 'no_receiver', attempts: 0 });
      } catch (err) {
        logger.warn({ tenant: event.data.tenantId, eventId: event.id, type: event.type, err: (err as Error).message }, 'run webhook event not recorded in the event log');
      }
      await queued.emit(event);
    },
  };

  // The connection-state gauge reads each OAuth tenant's binding and chain at scrape time (src/connect/status.ts).
  const all = (): TenantConfig[] => [...byId.values(), ...tenantStore.list().filter((t) => !byId.has(t.config.id)).map((t) => t.config)];
  metrics?.watchConnections(() => connectionStates(redis, env.KEY_PREFIX, all(), { keys: env }));
  metrics?.tenantLabelsWhen(perTenantSeries(env.METRICS_TENANT_LABELS, () => byId.size + tenantStore.list().filter((t) => !byId.has(t.config.id)).length));

  return {
    env,
    logger,
    redis,
    queues,
    stores,
    mirror,
    flags,
    auth,
    metrics,
    outage,
    webhookEvents,
    notify,
    events,
    tokenBox,
    tenantStore,
    tenant: lookup,
    tenants: all,
    sourceOf: (id) => (byId.has(id) ? 'file' : tenantStore.get(id) !== undefined ? 'api' : undefined),
    setTenants(file) {
      byId = new Map(file.tenants.map((t) => [t.id, t]));
      for (const [id, c] of clients) if (lookup(id) !== c.config) clients.delete(id);
      for (const [id, a] of adapters) {
        if (lookup(id) !== a.config) {
          adapters.delete(id);
          void a.adapter.close?.();
        }
      }
    },
    hold(tenantId) {
      holds.set(tenantId, (holds.get(tenantId) ?? 0) + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const n = (holds.get(tenantId) ?? 1) - 1;
        if (n > 0) holds.set(tenantId, n);
        else holds.delete(tenantId);
        usedAt.set(tenantId, Date.now());
      };
    },
    dropIdle,
    tenantObjects: () => ({ clients: clients.size, adapters: adapters.size, providers: auth.providers() }),
    clientFor(tenant) {
      usedAt.set(tenant.id, Date.now());
      const cached = clients.get(tenant.id);
      if (cached && cached.config === tenant) return cached.client;
      const client = new CollectionsClient({
        baseUrl: tenant.collections.baseUrl ?? env.COLLECTIONS_BASE_URL,
        tokens: auth.providerFor(tenant),
        timeouts: {
          connectMs: env.HTTP_CONNECT_TIMEOUT_MS,
          headersMs: env.HTTP_HEADERS_TIMEOUT_MS,
          bodyMs: env.HTTP_BODY_TIMEOUT_MS,
          requestMs: env.HTTP_REQUEST_TIMEOUT_MS,
        },
        retries: env.HTTP_RETRIES,
        dispatcher: agent,
        logger: logger.child({ tenant: tenant.id }),
        ...(onRequest ? { onRequest } : {}),
      });
      clients.set(tenant.id, { config: tenant, client });
      return client;
    },
    adapterFor(tenant) {
      usedAt.set(tenant.id, Date.now());
      const cached = adapters.get(tenant.id);
      if (cached && cached.config === tenant) return cached.adapter;
      const adapter = createAdapter(tenant.platform, {
        logger: logger.child({ tenant: tenant.id }),
        ...(options.memoryPlatforms ? { memoryPlatforms: options.memoryPlatforms } : {}),
        redis,
        prefix: env.KEY_PREFIX,
        tenantId: tenant.id,
        ...(tokenBox !== undefined ? { tokenKey: tokenBox } : {}),
        ...(env.FILE_PLATFORM_ROOT !== undefined ? { fileRoot: env.FILE_PLATFORM_ROOT } : {}),
        // The platform refused the grant, or the chain cannot be decrypted with our keys (each marked, once, by the
        // process that saw it); or a chain marked so decrypts again (the old key given back).
        authHooks: {
          onRevoked: (r) => {
            void notify.emit(connectionChangedEvent({ tenantId: tenant.id, platform: tenant.platform.kind, state: 'needs_reconnect', reason: r.reason, connection: r.connection, at: r.at }));
          },
          onUndecryptable: (r) => {
            if (oauthOf(tenant.platform) === undefined) return;
            void notify.emit(connectionChangedEvent({ tenantId: tenant.id, platform: tenant.platform.kind, state: 'needs_reconnect', reason: r.reason, connection: r.connection, at: r.at }));
          },
          onReadable: (r) => {
            const reason = oauthOf(tenant.platform) === undefined ? 'the platform takes the credentials again' : 'the token chain decrypts again (PLATFORM_TOKEN_KEY_PREVIOUS)';
            void notify.emit(connectionChangedEvent({ tenantId: tenant.id, platform: tenant.platform.kind, state: 'connected', reason, connection: r.connection, at: r.at }));
          },
        },
      });
      adapters.set(tenant.id, { config: tenant, adapter });
      return adapter;
    },
    async close() {
      clearInterval(sweep);
      await Promise.allSettled([...adapters.values()].map(async (a) => a.adapter.close?.()));
      await auth.close();
      await closeQueues(queues);
      await agent.close().catch(() => undefined);
      outage.close();
      redis.disconnect();
    },
  };
}

/** Tenants up to which METRICS_TENANT_LABELS=auto keeps a series per tenant (decision 0273). */
export const PER_TENANT_SERIES_MAX = 1_000;

/**
 * Whether /metrics has a series per tenant now: `on`, `off`, or (`auto`) while the tenants number at most
 * PER_TENANT_SERIES_MAX. Asked on every metric write: the count is taken again at most every 10 s.
 */
export function perTenantSeries(mode: 'auto' | 'on' | 'off', count: () => number): () => boolean {
  if (mode !== 'auto') return () => mode === 'on';
  let at = -Infinity;
  let answer = true;
  return () => {
    const now = Date.now();
    if (now - at > 10_000) {
      at = now;
      answer = count() <= PER_TENANT_SERIES_MAX;
    }
    return answer;
  };
}
