import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;
const EXTEND = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;

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

  /** Tries until `waitMs` has passed, polling every `pollMs`. */
  async acquireWithin(waitMs: number, pollMs = 50, signal?: AbortSignal): Promise<boolean> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (await this.acquire()) return true;
      if (Date.now() >= deadline || signal?.aborted) return false;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  async extend(ttlMs = this.ttlMs): Promise<boolean> {
    return (await this.redis.eval(EXTEND, 1, this.key, this.owner, String(ttlMs))) === 1;
  }

  async isHeld(): Promise<boolean> {
    return (await this.redis.get(this.key)) === this.owner;
  }

  async release(): Promise<boolean> {
    return (await this.redis.eval(RELEASE, 1, this.key, this.owner)) === 1;
  }
}
