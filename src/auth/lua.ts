import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A Lua script run by EVALSHA (one round trip), loading itself with EVAL when Redis does not know it yet. */
export class LuaScript {
  readonly sha: string;
  constructor(
    readonly source: string,
    readonly numKeys: number,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    if (keys.length !== this.numKeys) throw new Error(`script expects ${this.numKeys} keys, got ${keys.length}`);
    try {
      return await redis.evalsha(this.sha, this.numKeys, ...keys, ...args);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        return redis.eval(this.source, this.numKeys, ...keys, ...args);
      }
      throw err;
    }
  }
}

/** Redis's clock in ms, inside a script (one clock for every process). */
export const NOW_MS = `local __t = redis.call('TIME'); local now = tonumber(__t[1]) * 1000 + math.floor(tonumber(__t[2]) / 1000)`;
