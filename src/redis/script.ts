/**
 * The one way our code runs Lua: a script run by SHA (EVALSHA), falling back to EVAL when the server does not
 * know it yet (a new or restarted Redis). One round trip in the steady state. Does not touch the client (no
 * `defineCommand`), so stores can share an injected connection. Lint keeps `eval`/`evalsha` in this room.
 *
 * Every key a script touches comes in as KEYS, never built inside Lua from another key's name (Redis Cluster
 * routes a script by its KEYS; test/redis/declared-keys.test.ts watches every script with MONITOR).
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export type LuaArg = string | number | Buffer;

export interface LuaScriptOptions {
  /** How many KEYS the script takes, checked on every run; leave out for a script that takes a list of keys. */
  numKeys?: number;
  /** Turns an error reply into a room's own error (state: STATE_CORRUPT); undefined leaves the error as it is. */
  mapError?: (err: Error) => Error | undefined;
}

export class LuaScript {
  /** Every script made so far (module constants, made at import): test/redis/declared-keys.test.ts runs them all. */
  static readonly made = new Set<LuaScript>();
  readonly sha: string;
  constructor(
    readonly source: string,
    private readonly options: LuaScriptOptions = {},
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
    LuaScript.made.add(this);
  }

  async run(redis: Redis, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    return this.#run(redis, keys, args, false);
  }

  /** The same, with the reply's strings as Buffers (values that are bytes, not text). */
  async runBuffer(redis: Redis, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    return this.#run(redis, keys, args, true);
  }

  async #run(redis: Redis, keys: readonly string[], args: readonly LuaArg[], buffers: boolean): Promise<unknown> {
    const { numKeys, mapError } = this.options;
    if (numKeys !== undefined && keys.length !== numKeys) throw new Error(`script expects ${numKeys} keys, got ${keys.length}`);
    try {
      try {
        return buffers ? await redis.callBuffer('EVALSHA', this.sha, keys.length, ...keys, ...args) : await redis.evalsha(this.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return buffers ? await redis.callBuffer('EVAL', this.source, keys.length, ...keys, ...args) : await redis.eval(this.source, keys.length, ...keys, ...args);
      }
    } catch (err) {
      throw (err instanceof Error ? mapError?.(err) : undefined) ?? err;
    }
  }
}

/** Redis's clock in ms as `now`, inside a script (one clock for every process). */
export const NOW_MS = `local __t = redis.call('TIME'); local now = tonumber(__t[1]) * 1000 + math.floor(tonumber(__t[2]) / 1000)`;
