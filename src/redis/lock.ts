/**
 * Locks: `RedisLock`, a single-instance Redis lock, and `keepAlive`, which holds any such lock for as long as
 * its work runs and aborts a signal the moment the lock is known lost (also when an extend hangs).
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { retry, type RetryPolicy } from '../retry.js';
import { LuaScript } from './script.js';

const RELEASE = new LuaScript('redis/lua/lock-release', { numKeys: 1 });
const EXTEND = new LuaScript('redis/lua/lock-extend', { numKeys: 1 });

/** Someone else holds the lock (acquireWithin's retryable failure). */
class Taken extends Error {}

/**
 * A single-instance Redis lock: `SET key owner NX PX ttl`, released and extended only by its owner
 * (Lua compare-and-delete / compare-and-expire), never a plain DEL. Not a fence on its own: callers that
 * write shared state re-check ownership (`isHeld`) just before the write.
 */
export class RedisLock {
  readonly owner: string;
  constructor(
    private readonly redis: Redis,
    readonly key: string,
    readonly ttlMs: number,
    owner: string = randomUUID(),
  ) {
    this.owner = owner;
  }

  async acquire(): Promise<boolean> {
    return (await this.redis.set(this.key, this.owner, 'PX', this.ttlMs, 'NX')) === 'OK';
  }

  /**
   * Tries until `waitMs` has passed, polling every `pollMs` (between half and all of it: equal jitter, so processes
   * waiting for one lock do not poll in step); the last try starts within `waitMs + pollMs`, as a try just before
   * `waitMs` and one poll would. False when the time is up or `signal` aborts.
   */
  async acquireWithin(waitMs: number, pollMs = 50, signal?: AbortSignal): Promise<boolean> {
    const policy: RetryPolicy = { retries: Infinity, baseMs: pollMs, capMs: pollMs, jitter: 'equal', retryable: (err) => err instanceof Taken };
    try {
      return await retry(
        async () => {
          if (await this.acquire()) return true;
          throw new Taken();
        },
        policy,
        { deadlineAt: Date.now() + waitMs + pollMs, signal, abortError: () => new Taken() },
      );
    } catch (err) {
      if (err instanceof Taken) return false;
      throw err;
    }
  }

  async extend(ttlMs = this.ttlMs): Promise<boolean> {
    return (await EXTEND.run(this.redis, [this.key], [this.owner, String(ttlMs)])) === 1;
  }

  async isHeld(): Promise<boolean> {
    return (await this.redis.get(this.key)) === this.owner;
  }

  async release(): Promise<boolean> {
    return (await RELEASE.run(this.redis, [this.key], [this.owner])) === 1;
  }
}

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
