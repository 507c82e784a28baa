/**
 * The token protocol (docs/architecture.md, "Tokens"): one token per client in Redis, shared by every
 * process; a gate and leases so a rotation never breaks requests in flight; compare-and-refresh on 401;
 * a refresher job as the only caller of the token endpoint; a cooldown when the credentials are refused.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { TokenProvider } from '../collections/token-provider.js';
import { requestToken } from '../collections/token.js';
import type { Secret } from '../secret.js';
import type { Logger } from '../logger.js';
import { nodesOf } from '../redis/connection.js';
import { authClientKey, authClientOfKey, authKeysPattern, secretFingerprint } from './keys.js';
import { noopAuthMetrics, type AuthMetrics } from './metrics.js';
import { RedisTokenProvider } from './provider.js';
import type { RefreshJobs, ScheduledClient } from './refresh-request.js';
import { TokenRefresher, type RefresherHooks, type RequestTokenFn } from './refresher.js';
import { resolveAuthSettings, type AuthSettings, type AuthSettingsInput } from './settings.js';
import { ClientAuthStore, type AuthStatus, type TokenBox } from './token-store.js';
import { AuthWakeups } from './wakeups.js';

export { authClientKey, authKeys, secretFingerprint, type AuthKeys } from './keys.js';
export { CredentialsRejectedError, isCredentialsRejected } from './errors.js';
export { noopAuthMetrics, ROTATION_REASONS, type AuthMetrics, type RotationReason } from './metrics.js';
export { RedisTokenProvider } from './provider.js';
export { refreshRequestSchema, type RefreshJobs, type RefreshRequest, type ScheduledClient } from './refresh-request.js';
export { TokenRefresher, type ClientCredentials, type RefresherHooks, type RequestTokenFn, type RotateOptions, type RotateOutcome } from './refresher.js';
export { resolveAuthSettings, authSettingsSchema, tokenPlan, MIN_MARGIN_MS, type AuthSettings, type AuthSettingsInput, type TokenPlan } from './settings.js';
export { ClientAuthStore, SEALED_PREFIX, type AuthFailure, type AuthState, type AuthStatus, type TokenBox } from './token-store.js';
export { AuthWakeups, type WakeKind } from './wakeups.js';

/** The part of a tenant's config the token protocol needs (TenantConfig fits). */
export interface AuthTenant {
  id: string;
  /** `authUrl`: the tenant's token endpoint, when not the deployment's (CreateAuthOptions.authUrl). */
  collections: { clientId: string; clientSecret: Secret; authUrl?: string | undefined };
  inFlightLimit?: number | undefined;
}

export interface CreateAuthOptions {
  /** Commands (scripts, locks). */
  redis: Redis;
  /** A connection for pub/sub; default `redis.duplicate()` (then closed by `close()`). */
  subscriber?: Redis;
  /** KEY_PREFIX (the same as BullMQ's). */
  prefix: string;
  /** The token endpoint's address of tenants that name none (COLLECTIONS_AUTH_URL). */
  authUrl: string;
  /** The refresh-token queue (on-demand rotations are enqueued there, schedulers upserted there). */
  jobs: RefreshJobs;
  logger: Logger;
  settings?: AuthSettingsInput;
  metrics?: AuthMetrics;
  /**
   * The key of the secrets' fingerprints (TOKEN_FINGERPRINT_KEY); every process of a deployment needs the same
   * one. Default: a random key of this process (fine for one process; several then each restart the cooldown).
   */
  fingerprintKey?: Buffer;
  /** Default: src/collections/token.ts's requestToken. */
  requestToken?: RequestTokenFn;
  /** Seals the token at rest (the platform tokens' cipher under PLATFORM_TOKEN_KEY); absent: plain text (decision 0121). */
  tokenBox?: TokenBox;
  hooks?: RefresherHooks;
  /** Sees the subscriber's connection errors first; true when it dealt with one (else it is logged here). */
  onConnectionError?: (err: Error) => boolean;
}

export interface Auth {
  readonly settings: AuthSettings;
  readonly refresher: TokenRefresher;
  /** The provider of a tenant (cached per tenant id, client and secret; a changed secret gives a new one). */
  providerFor(tenant: AuthTenant): TokenProvider;
  /** The keyed fingerprint of a client's secret, as stored with a refusal. */
  fingerprint(clientId: string, secret: Secret): string;
  /** The client key of a tenant's token: one per (auth URL, client id). */
  clientKeyOf(tenant: AuthTenant): string;
  status(clientKey: string): Promise<AuthStatus>;
  /** Upserts the per-client rotation schedulers (at start and on a tenants change; shards locked: any process may call it). */
  ensureSchedules(tenants: readonly AuthTenant[]): Promise<{ upserted: string[]; removed: string[]; busy?: number[] }>;
  /**
   * Applies a (re)loaded tenants file (issue 17, growth): the schedulers as ensureSchedules, then deletes the
   * token state (token, gate, leases, failure, lock) of every client no longer in it, old key layouts included.
   * Every process calls it at start and on a change (the schedulers' shards are locked; the deletes are idempotent).
   * `busy`: shards of the schedulers another process held throughout (it was putting them in place).
   */
  applyTenants(tenants: readonly AuthTenant[]): Promise<{ upserted: string[]; removed: string[]; dropped: string[]; busy?: number[] }>;
  /**
   * Drops a tenant's provider (an idle tenant, issue 40): its pooled leases go back, its client's channel is left
   * when no other provider of this process listens to it. A later `providerFor` makes a new one.
   */
  forget(tenantId: string): void;
  /** How many providers this process holds. */
  providers(): number;
  close(): Promise<void>;
}

/** Builds the token protocol for one process (the composition root calls it once). */
export function createAuth(o: CreateAuthOptions): Auth {
  const settings = resolveAuthSettings(o.settings);
  const metrics = o.metrics ?? noopAuthMetrics;
  const logger = o.logger.child({ component: 'auth' });
  const subscriber = o.subscriber ?? o.redis.duplicate();
  subscriber.on('error', (err: Error) => {
    if (!o.onConnectionError?.(err)) logger.warn({ err: err.message }, 'auth: subscriber connection error');
  });
  const wakeups = new AuthWakeups(subscriber, logger, o.subscriber === undefined);
  const fingerprintKey = o.fingerprintKey ?? randomBytes(32);
  const fingerprint = (clientId: string, secret: Secret): string => secretFingerprint(clientId, secret, fingerprintKey);
  const refresher = new TokenRefresher({
    redis: o.redis,
    prefix: o.prefix,
    wakeups,
    settings,
    logger,
    requestToken: o.requestToken ?? requestToken,
    metrics,
    planCheck: (request, delayMs) => o.jobs.plan(request, delayMs),
    fingerprint,
    ...(o.hooks ? { hooks: o.hooks } : {}),
    ...(o.tokenBox ? { tokenBox: o.tokenBox } : {}),
  });
  const stores = new Map<string, ClientAuthStore>();
  const storeOf = (clientKey: string): ClientAuthStore => {
    let s = stores.get(clientKey);
    if (!s) {
      s = new ClientAuthStore(o.redis, o.prefix, clientKey, o.tokenBox);
      stores.set(clientKey, s);
    }
    return s;
  };
  const providers = new Map<string, { sig: string; provider: RedisTokenProvider }>();
  const clientKeyOf = (tenant: AuthTenant): string => authClientKey(tenant.collections.authUrl ?? o.authUrl, tenant.collections.clientId);

  return {
    settings,
    refresher,
    clientKeyOf,
    fingerprint,
    providerFor(tenant) {
      const clientKey = clientKeyOf(tenant);
      const fp = fingerprint(tenant.collections.clientId, tenant.collections.clientSecret);
      const limit = tenant.inFlightLimit ?? settings.inFlightLimit;
      const sig = `${clientKey}\0${fp}\0${limit}`;
      const cached = providers.get(tenant.id);
      if (cached?.sig === sig) return cached.provider;
      if (cached) void cached.provider.close();
      const provider = new RedisTokenProvider({
        store: storeOf(clientKey),
        wakeups,
        settings,
        metrics,
        logger,
        requestRefresh: (r) => o.jobs.request(r),
        tenantId: tenant.id,
        clientId: tenant.collections.clientId,
        fingerprint: fp,
        inFlightLimit: limit,
      });
      providers.set(tenant.id, { sig, provider });
      return provider;
    },
    status: (clientKey) => storeOf(clientKey).status(),
    forget(tenantId) {
      const p = providers.get(tenantId);
      if (!p) return;
      providers.delete(tenantId);
      const clientKey = p.sig.split('\0')[0] ?? '';
      void p.provider.close().then(
        () => {
          // Another tenant of the same client keeps its store and channel.
          for (const other of providers.values()) if (other.sig.startsWith(`${clientKey}\0`)) return;
          const store = stores.get(clientKey);
          stores.delete(clientKey);
          if (store) wakeups.release(store.keys.channel);
        },
        (err: unknown) => logger.warn({ err, tenant: tenantId }, 'auth: closing an idle provider failed'),
      );
    },
    providers: () => providers.size,
    ensureSchedules(tenants) {
      const clients: ScheduledClient[] = tenants.map((t) => ({ clientKey: clientKeyOf(t), tenantId: t.id }));
      return o.jobs.schedule(clients, settings.scheduleEveryMs);
    },
    async applyTenants(tenants) {
      const scheduled = await this.ensureSchedules(tenants);
      const keep = new Set(tenants.map(clientKeyOf));
      const dropped = new Set<string>();
      // SCAN is per server: on a cluster, every master. Keys are unlinked one client at a time (one client's
      // keys share its hash tag, so one slot: no cross-slot command).
      for (const node of nodesOf(o.redis)) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', authKeysPattern(o.prefix), 'COUNT', 500);
          cursor = next;
          const gone = new Map<string, string[]>();
          for (const key of keys) {
            const client = authClientOfKey(o.prefix, key);
            if (client === undefined || keep.has(client)) continue;
            dropped.add(client);
            gone.set(client, [...(gone.get(client) ?? []), key]);
          }
          for (const keysOfClient of gone.values()) await o.redis.unlink(...keysOfClient);
        } while (cursor !== '0');
      }
      for (const client of dropped) stores.delete(client);
      for (const [tenantId, p] of providers) {
        if (!dropped.has(p.sig.split('\0')[0] ?? '')) continue;
        providers.delete(tenantId);
        await p.provider.close();
      }
      if (dropped.size > 0) logger.info({ clients: [...dropped] }, 'auth: token state of clients no longer in the tenants file deleted');
      return { ...scheduled, dropped: [...dropped] };
    },
    async close() {
      // Pooled leases go back now, not when they expire (a rolling restart frees its share of the limit).
      await Promise.all([...providers.values()].map((p) => p.provider.close().catch(() => undefined)));
      providers.clear();
      await wakeups.close();
    },
  };
}
