/**
 * A platform's API limits, kept in Redis so every process of the fleet shares them, given as parameters (each
 * platform's module says its own: Xero's per organisation 5 calls in flight, 60 per minute and 5,000 per day, and per
 * app 10,000 per minute; QuickBooks' per company 10 in flight and 500 per minute; 0 turns a limit off).
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
import { clientKey, connectionKey } from '../../redis/keys.js';
import { LuaScript } from '../../redis/script.js';
import { PlatformRateLimitedError } from '../types.js';
import { retry, type RetryPolicy } from '../../retry.js';
import { headerValue } from '../wire.js';

export type LimitScope = 'minute' | 'day' | 'concurrent' | 'app';

export interface PlatformLimits {
  concurrent: number;
  perMinute: number;
  /** 0: no daily limit. */
  perDay: number;
  /** 0: no app-wide limit. */
  appPerMinute: number;
  /** A lease frees itself after this long (longer than any one request). */
  leaseMs: number;
  /** How long a call waits for a free in-flight slot before giving up with a `concurrent` rate limit. */
  concurrentWaitMs: number;
  /** How long a spent daily limit (`X-DayLimit-Remaining: 0`, no Retry-After) blocks calls. */
  dayBlockMs: number;
}

const ACQUIRE = new LuaScript('platforms/oauth/lua/limit-acquire', { numKeys: 8 });
const BLOCK = new LuaScript('platforms/oauth/lua/limit-block', { numKeys: 1 });

export interface Lease {
  release(): Promise<void>;
}

/**
 * The wait for a free in-flight slot: a poll every 50-100 ms (equal jitter on 100 ms, so waiting processes do not
 * poll in step), never longer than the script says a slot needs to free, within `concurrentWaitMs`.
 */
const SLOT_WAIT: Omit<RetryPolicy, 'deadlineMs' | 'retryable'> = { retries: Infinity, baseMs: 100, capMs: 100, jitter: 'equal' };

/** The script found every in-flight slot taken: `waitMs` until the first lease is due to free. */
class SlotsTaken extends Error {
  constructor(readonly waitMs: number) {
    super('every in-flight slot is taken');
  }
}

/**
 * Where one connection's limits live: `conn(...parts)` for the connection's, `app(part)` for its app's. The script
 * reads both at once, so they must share one hash tag.
 */
export interface LimitKeys {
  conn: (...parts: string[]) => string;
  app: (part: string) => string;
}

export class PlatformRateLimiter {
  readonly limits: PlatformLimits;
  private readonly keys: string[];
  private readonly blockKeys: Record<LimitScope, string>;

  constructor(
    private readonly redis: Redis,
    /** For messages: `xero`, `quickbooks`. */
    private readonly name: string,
    { conn, app }: LimitKeys,
    limits: PlatformLimits,
  ) {
    this.limits = limits;
    this.blockKeys = { minute: conn('block', 'minute'), day: conn('block', 'day'), concurrent: conn('block', 'concurrent'), app: app('block') };
    this.keys = [conn('inflight'), conn('minute'), conn('day'), app('minute'), this.blockKeys.minute, this.blockKeys.day, this.blockKeys.concurrent, this.blockKeys.app];
  }

  /**
   * A lease for one call. Waits (bounded) for a free in-flight slot; any other spent limit throws a
   * PlatformRateLimitedError with how long to wait, for the sync engine to wait or reschedule.
   */
  async acquire(signal?: AbortSignal): Promise<Lease> {
    const id = randomUUID();
    const l = this.limits;
    try {
      return await retry(
        async () => {
          signal?.throwIfAborted();
          const [ok, wait, scope] = (await ACQUIRE.run(this.redis, this.keys, [
            id, String(l.leaseMs), String(l.concurrent), String(l.perMinute), String(l.perDay), String(l.appPerMinute),
          ])) as [number, number, string];
          if (ok === 1) return { release: async () => void (await this.redis.zrem(this.keys[0]!, id)) };
          const waitMs = Math.max(1, Number(wait));
          if (scope === 'concurrent') throw new SlotsTaken(waitMs);
          const s = (['minute', 'day', 'concurrent', 'app'] as const).find((x) => x === scope) ?? 'minute';
          throw this.limited(s, waitMs);
        },
        { ...SLOT_WAIT, deadlineMs: l.concurrentWaitMs, retryable: (err) => err instanceof SlotsTaken },
        { signal, wait: (err, backoff) => Math.min(backoff, (err as SlotsTaken).waitMs) },
      );
    } catch (err) {
      if (err instanceof SlotsTaken && !signal?.aborted) throw this.limited('concurrent', err.waitMs);
      throw err;
    }
  }

  private limited(s: LimitScope, waitMs: number): PlatformRateLimitedError {
    return new PlatformRateLimitedError(s, s === 'concurrent' ? Math.min(waitMs, 1_000) : waitMs, `${this.name}: ${describe(s)} limit reached; retry in ${Math.ceil(waitMs / 1000)} s`);
  }

  /** Stops every process's calls for `ms` (a 429, or a limit Xero reports as spent). */
  async block(scope: LimitScope, ms: number): Promise<void> {
    if (ms <= 0) return;
    await BLOCK.run(this.redis, [this.blockKeys[scope]], [String(Math.ceil(ms))]);
  }

  /** Reads Xero's `X-...-Remaining` headers and blocks a limit it reports as spent (other platforms send none). */
  async observe(headers: Record<string, string | string[] | undefined>): Promise<void> {
    const remaining = (name: string): number | undefined => {
      const v = headerValue(headers, name);
      const n = Number(v);
      return v === undefined || !Number.isFinite(n) ? undefined : n;
    };
    if (remaining('x-minlimit-remaining') === 0) await this.block('minute', 60_000);
    if (remaining('x-appminlimit-remaining') === 0) await this.block('app', 60_000);
    if (remaining('x-daylimit-remaining') === 0) await this.block('day', this.limits.dayBlockMs);
  }
}

/**
 * Where a platform's limits of one connection live, by the scope of its limits (its module's `limits.scope`):
 * - `app` (Xero: an app-wide limit besides the connection's): `<base>:<kind>:app:{<clientId>}:org:<connection>:...`,
 *   under the app's hash tag, so the script reads the connection's limits and its app's in one slot;
 * - `connection` (QuickBooks, Zoho Books: per company or organisation only): `<base>:<kind>:{<connection>}:limit:...`.
 */
export function limitKeysOf(kind: string, scope: 'app' | 'connection', prefix: string, connection: string, clientId: string): LimitKeys {
  if (scope === 'app') {
    return {
      conn: (...parts) => clientKey(prefix, clientId, [kind, 'app'], 'org', connection, ...parts),
      app: (part) => clientKey(prefix, clientId, [kind, 'app'], part),
    };
  }
  return {
    conn: (...parts) => connectionKey(prefix, connection, kind, 'limit', ...parts),
    app: (part) => connectionKey(prefix, connection, kind, 'limit', 'app', part),
  };
}

/** The limiter of one connection of a platform whose limits are `limits` (its module's), with `overrides` (tests). */
export function limiterFor(
  platform: { kind: string; limits: PlatformLimits & { scope: 'app' | 'connection' } },
  redis: Redis,
  prefix: string,
  connection: string,
  clientId: string,
  overrides: Partial<PlatformLimits> = {},
): PlatformRateLimiter {
  const { scope, ...limits } = platform.limits;
  return new PlatformRateLimiter(redis, platform.kind, limitKeysOf(platform.kind, scope, prefix, connection, clientId), { ...limits, ...overrides });
}

/** `Retry-After` in ms: the app's one parser (src/retry.ts), shared with the collections client. */
export { parseRetryAfter as retryAfterMs } from '../../retry.js';

export function describe(scope: LimitScope): string {
  return scope === 'minute' ? 'per-minute' : scope === 'day' ? 'daily' : scope === 'concurrent' ? 'concurrent-calls' : 'app-wide per-minute';
}
