/**
 * One sync run per tenant across processes: a `RedisLock` on `<prefix>:lock:run:<tenant>` (SET NX PX, owner-
 * checked extend and release), and `keepAlive`, which extends a held lock on an interval and aborts a signal
 * the moment the lock is known lost.
 */
import type { Redis } from 'ioredis';
import { RedisLock } from '../redis/lock.js';
import { assertTenant } from './keys.js';
import { key } from '../queues/names.js';

/** Why a keepAlive signal aborted. */
export class LockLostError extends Error {
  readonly code = 'LOCK_LOST';
  constructor(
    readonly lockKey: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LockLostError';
  }
}

export interface KeepAlive {
  /** Aborted (reason: LockLostError) when the lock is lost. Never aborted by `stop()`. */
  readonly signal: AbortSignal;
  stop(): void;
}

/**
 * Extends `lock` every `intervalMs` (keep it well under the lock's TTL: a third is usual). The signal aborts
 * when an extend finds another owner or no key, or when no extend has succeeded for a whole TTL (Redis
 * unreachable, or a command hanging in a client that retries forever): by then the lock may have expired and
 * been taken elsewhere. The check runs on its own timer, so a hung extend cannot hide the loss.
 */
export function keepAlive(lock: RedisLock, intervalMs: number, onLost?: (err: LockLostError) => void): KeepAlive {
  const controller = new AbortController();
  let stopped = false;
  let inFlight = false;
  // When the last successful extend was sent: the key lives at least a TTL from then.
  let heldSince = Date.now();
  let lastError: unknown;
  const lose = (err: LockLostError): void => {
    if (stopped) return;
    stop();
    controller.abort(err);
    onLost?.(err);
  };
  const tick = (): void => {
    if (stopped) return;
    if (Date.now() - heldSince >= lock.ttlMs) {
      lose(new LockLostError(lock.key, `lock ${lock.key} could not be extended for ${lock.ttlMs} ms`, { cause: lastError }));
      return;
    }
    if (inFlight) return;
    inFlight = true;
    const sentAt = Date.now();
    lock.extend().then(
      (ok) => {
        inFlight = false;
        if (ok) heldSince = sentAt;
        else lose(new LockLostError(lock.key, `lock ${lock.key} is no longer held by ${lock.owner}`));
      },
      (err: unknown) => {
        inFlight = false;
        lastError = err;
      },
    );
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  function stop(): void {
    stopped = true;
    clearInterval(timer);
  }
  return { signal: controller.signal, stop };
}

export class TenantRunLock {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  key(tenant: string): string {
    assertTenant(tenant);
    return key(this.prefix, 'lock', 'run', tenant);
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
