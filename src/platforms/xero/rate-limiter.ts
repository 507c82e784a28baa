/**
 * Xero's limits, kept in Redis so every process of the fleet shares them: per connection (Xero tenant) at most
 * 5 calls in flight, 60 per minute and 5,000 per day; per app 10,000 per minute.
 *
 * - In flight: a sorted set of leases scored by their expiry, so a crashed process's lease frees itself.
 * - Per minute: a sliding log (a sorted set of call times over the last 60 s).
 * - Per day: a counter that lives 24 hours from its first call. Per app per minute: a fixed-window counter.
 * - Blocks: when Xero says a limit is spent (a 429, or an `X-...-Remaining` header at 0) a key with that TTL
 *   stops every process until it expires.
 * One Lua script checks everything and takes a lease and a slot in one step, on Redis's clock.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { clientKey } from '../../redis/keys.js';
import { LuaScript, NOW_MS } from '../../redis/script.js';
import { PlatformRateLimitedError } from '../types.js';

export type LimitScope = 'minute' | 'day' | 'concurrent' | 'app';

export interface XeroLimits {
  concurrent: number;
  perMinute: number;
  perDay: number;
  appPerMinute: number;
  /** A lease frees itself after this long (longer than any one request). */
  leaseMs: number;
  /** How long a call waits for a free in-flight slot before giving up with a `concurrent` rate limit. */
  concurrentWaitMs: number;
  /** How long a spent daily limit (`X-DayLimit-Remaining: 0`, no Retry-After) blocks calls. */
  dayBlockMs: number;
}

export const XERO_LIMITS: XeroLimits = {
  concurrent: 5,
  perMinute: 60,
  perDay: 5_000,
  appPerMinute: 10_000,
  leaseMs: 60_000,
  concurrentWaitMs: 30_000,
  dayBlockMs: 15 * 60_000,
};

/**
 * KEYS: inflight, minute log, day counter, app counter, block:minute, block:day, block:concurrent, block:app.
 * ARGV: lease id, lease ms, concurrent, per minute, per day, app per minute.
 * Returns {1, 0, ''} when taken, or {0, wait ms, scope}.
 */
const ACQUIRE = new LuaScript(`${NOW_MS}
local scopes = {'minute', 'day', 'concurrent', 'app'}
for i = 5, 8 do
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl > 0 then return {0, ttl, scopes[i - 4]} end
end
local day = tonumber(redis.call('GET', KEYS[3]) or '0')
if day >= tonumber(ARGV[5]) then
  local ttl = redis.call('PTTL', KEYS[3])
  if ttl < 0 then ttl = 60000 end
  return {0, ttl, 'day'}
end
local window = math.floor(now / 60000)
local appWindow = tonumber(redis.call('HGET', KEYS[4], 'w') or '-1')
local appCount = 0
if appWindow == window then appCount = tonumber(redis.call('HGET', KEYS[4], 'n') or '0') end
if appCount >= tonumber(ARGV[6]) then return {0, (window + 1) * 60000 - now, 'app'} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local wait = tonumber(oldest[2]) + 60000 - now
  if wait < 1 then wait = 1 end
  return {0, wait, 'minute'}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now, 'concurrent'}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('PEXPIRE', KEYS[2], 61000)
if redis.call('INCR', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], 86400000) end
if appWindow ~= window then
  redis.call('HSET', KEYS[4], 'w', window, 'n', 1)
else
  redis.call('HINCRBY', KEYS[4], 'n', 1)
end
redis.call('PEXPIRE', KEYS[4], 120000)
return {1, 0, ''}
`, { numKeys: 8 });

/** Sets a block only when it lasts longer than the one already there. KEYS: block. ARGV: ms. */
const BLOCK = new LuaScript(`
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return 1
`, { numKeys: 1 });

export interface Lease {
  release(): Promise<void>;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export class XeroRateLimiter {
  readonly limits: XeroLimits;
  private readonly keys: string[];
  private readonly blockKeys: Record<LimitScope, string>;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    connection: string,
    clientId: string,
    limits: Partial<XeroLimits> = {},
  ) {
    this.limits = { ...XERO_LIMITS, ...limits };
    // The script takes a connection's limits and its app's together: one slot, so a connection's limit keys carry
    // its app's hash tag (they are short-lived counters; the connection's tokens keep a tag of their own).
    const conn = (...parts: string[]): string => clientKey(prefix, clientId, ['xero', 'app'], 'org', connection, ...parts);
    const app = (part: string): string => clientKey(prefix, clientId, ['xero', 'app'], part);
    this.blockKeys = { minute: conn('block', 'minute'), day: conn('block', 'day'), concurrent: conn('block', 'concurrent'), app: app('block') };
    this.keys = [conn('inflight'), conn('minute'), conn('day'), app('minute'), this.blockKeys.minute, this.blockKeys.day, this.blockKeys.concurrent, this.blockKeys.app];
  }

  /**
   * A lease for one call. Waits (bounded) for a free in-flight slot; any other spent limit throws a
   * PlatformRateLimitedError with how long to wait, for the sync engine to wait or reschedule.
   */
  async acquire(signal?: AbortSignal): Promise<Lease> {
    const id = randomUUID();
    const deadline = Date.now() + this.limits.concurrentWaitMs;
    for (;;) {
      signal?.throwIfAborted();
      const l = this.limits;
      const [ok, wait, scope] = (await ACQUIRE.run(this.redis, this.keys, [
        id, String(l.leaseMs), String(l.concurrent), String(l.perMinute), String(l.perDay), String(l.appPerMinute),
      ])) as [number, number, string];
      if (ok === 1) return { release: async () => void (await this.redis.zrem(this.keys[0]!, id)) };
      const waitMs = Math.max(1, Number(wait));
      if (scope === 'concurrent' && Date.now() + Math.min(waitMs, 100) < deadline) {
        await sleep(Math.min(waitMs, 25 + Math.floor(Math.random() * 75)));
        continue;
      }
      const s = (['minute', 'day', 'concurrent', 'app'] as const).find((x) => x === scope) ?? 'minute';
      throw new PlatformRateLimitedError(s, s === 'concurrent' ? Math.min(waitMs, 1_000) : waitMs, `xero: ${describe(s)} limit reached; retry in ${Math.ceil(waitMs / 1000)} s`);
    }
  }

  /** Stops every process's calls for `ms` (a 429, or a limit Xero reports as spent). */
  async block(scope: LimitScope, ms: number): Promise<void> {
    if (ms <= 0) return;
    await BLOCK.run(this.redis, [this.blockKeys[scope]], [String(Math.ceil(ms))]);
  }

  /** Reads Xero's `X-...-Remaining` headers and blocks a limit it reports as spent. */
  async observe(headers: Record<string, string | string[] | undefined>): Promise<void> {
    const remaining = (name: string): number | undefined => {
      const v = headers[name];
      const n = Number(Array.isArray(v) ? v[0] : v);
      return v === undefined || !Number.isFinite(n) ? undefined : n;
    };
    if (remaining('x-minlimit-remaining') === 0) await this.block('minute', 60_000);
    if (remaining('x-appminlimit-remaining') === 0) await this.block('app', 60_000);
    if (remaining('x-daylimit-remaining') === 0) await this.block('day', this.limits.dayBlockMs);
  }
}

export function describe(scope: LimitScope): string {
  return scope === 'minute' ? 'per-minute' : scope === 'day' ? 'daily' : scope === 'concurrent' ? 'concurrent-calls' : 'app-wide per-minute';
}
