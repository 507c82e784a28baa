/**
 * The composition root of read-only commands (`status`): the state stores on one Redis connection and nothing else
 * (no BullMQ, no token protocol, no HTTP clients), so such a command starts in a fraction of createApp's time
 * (issue 14). It reads what createApp's parts write, through the same stores and key builders: the stores `status`
 * reads, imported one by one, not state/index.js, whose id maps, mirror, intents and payment ledger (with the
 * platform record schemas) a read-only command never opens.
 */
import type { Redis } from 'ioredis';
import { authClientKey } from './auth/keys.js';
import { ClientAuthStore, type AuthStatus } from './auth/token-store.js';
import type { Env } from './config/env.js';
import { authUrlOf, type TenantConfig, type TenantsFile } from './config/tenants.js';
import { queueJobCounts, type JobCounts } from './queues/counts.js';
import { QUEUES } from './queues/names.js';
import { connectRedis, createRedis, evictionWarning, redisTargetOf } from './redis/connection.js';
import { CursorStore } from './state/cursors.js';
import { DeadLetterStore } from './state/dead-letters.js';
import { DeliveryStore } from './state/deliveries.js';
import type { StateStores } from './state/index.js';
import { PendingStore } from './state/pending.js';
import { TenantRunLock } from './state/run-lock.js';
import { TenantStore } from './state/tenant-store.js';
import { TokenCipher } from './platforms/oauth/cipher.js';
import { RunStore } from './state/runs.js';

/** The state stores a read-only command reads: the same classes createStateStores builds. */
export type ReadStores = Pick<StateStores, 'cursors' | 'runs' | 'deadLetters' | 'pending' | 'runLock' | 'deliveries'>;

export interface StateApp {
  readonly env: Env;
  /** The one connection (for a command's store of its own: connect links, src/connect/links.ts). */
  readonly redis: Redis;
  readonly stores: ReadStores;
  tenants(): readonly TenantConfig[];
  tenant(id: string): TenantConfig | undefined;
  /** The collections-service token state of a tenant's client (never the token). */
  authStatus(tenant: TenantConfig): Promise<AuthStatus>;
  /** Job counts per queue, read from BullMQ's keys. */
  queueCounts(): Promise<Record<keyof typeof QUEUES, JobCounts>>;
  /** Why this Redis may lose our keys (maxmemory-policy), or undefined. */
  redisWarning(): Promise<string | undefined>;
  close(): void;
}

export async function openStateApp(options: { env: Env; tenants: TenantsFile }): Promise<StateApp> {
  const { env } = options;
  const target = redisTargetOf(env);
  const redis: Redis = await connectRedis(createRedis(target, 'producer'), target, { waitMs: 0 });
  const byId = new Map(options.tenants.tenants.map((t) => [t.id, t]));
  // The stored tenants (created over the API), the file's winning an id both name; without PLATFORM_TOKEN_KEY
  // their secrets cannot be opened, and they are not shown.
  const stored = new TenantStore(redis, env.KEY_PREFIX, TokenCipher.fromKeys(env));
  if (stored.sealing) await stored.refresh();
  for (const t of stored.list()) if (!byId.has(t.config.id)) byId.set(t.config.id, t.config);
  const queueNames = Object.keys(QUEUES) as (keyof typeof QUEUES)[];
  return {
    env,
    redis,
    stores: {
      cursors: new CursorStore(redis, env.KEY_PREFIX),
      runs: new RunStore(redis, env.KEY_PREFIX),
      deadLetters: new DeadLetterStore(redis, env.KEY_PREFIX),
      pending: new PendingStore(redis, env.KEY_PREFIX),
      runLock: new TenantRunLock(redis, env.KEY_PREFIX),
      deliveries: new DeliveryStore(redis, env.KEY_PREFIX),
    },
    tenants: () => [...byId.values()],
    tenant: (id) => byId.get(id),
    authStatus: (t) => new ClientAuthStore(redis, env.KEY_PREFIX, authClientKey(authUrlOf(env, t), t.collections.clientId)).status(),
    async queueCounts() {
      const counts = await Promise.all(queueNames.map((name) => queueJobCounts(redis, env.KEY_PREFIX, QUEUES[name])));
      return Object.fromEntries(queueNames.map((name, i) => [name, counts[i]!])) as Record<keyof typeof QUEUES, JobCounts>;
    },
    redisWarning: () => evictionWarning(redis),
    close: () => redis.disconnect(),
  };
}
