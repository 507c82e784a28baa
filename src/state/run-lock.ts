/**
 * One sync run per tenant across processes: a `RedisLock` (src/redis/lock.ts) on the tenant's run-lock key
 * (SET NX PX, owner-checked extend and release), held for a run by the generic `keepAlive`.
 */
import type { Redis } from 'ioredis';
import { keepAlive, RedisLock, type KeepAlive, type LockLostError } from '../redis/lock.js';
import { stateKey } from './keys.js';

export class TenantRunLock {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    return stateKey(this.prefix, 'lock', tenant);
  }

  /** The lock object for (tenant, owner); nothing is written until `acquire`. */
  lock(tenant: string, owner: string, ttlMs: number): RedisLock {
    return new RedisLock(this.redis, this.key(tenant), ttlMs, owner);
  }

  async acquire(tenant: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.lock(tenant, owner, ttlMs).acquire();
  }

  /** Only the owner can extend; false when the lock is gone or held by another owner. */
  async extend(tenant: string, owner: string, ttlMs: number): Promise<boolean> {
    return this.lock(tenant, owner, ttlMs).extend();
  }

  /** Only the owner can release; false when it did not hold the lock. */
  async release(tenant: string, owner: string): Promise<boolean> {
    return this.lock(tenant, owner, 1).release();
  }

  /** The current owner, if any. */
  async holder(tenant: string): Promise<string | undefined> {
    return (await this.redis.get(this.key(tenant))) ?? undefined;
  }

  /** Keeps (tenant, owner)'s lock extended to `ttlMs` every `intervalMs` (default a third of the TTL). */
  keepAlive(tenant: string, owner: string, ttlMs: number, intervalMs = Math.max(10, Math.floor(ttlMs / 3)), onLost?: (err: LockLostError) => void): KeepAlive {
    return keepAlive(this.lock(tenant, owner, ttlMs), intervalMs, onLost);
  }
}
