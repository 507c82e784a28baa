/**
 * A Lua script run by SHA (EVALSHA), falling back to EVAL when the server does not know it yet (a new or
 * restarted Redis). One round trip in the steady state. Does not touch the client (no `defineCommand`), so
 * stores can share an injected connection.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export type LuaArg = string | number;

export class LuaScript {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/**
 * Lua helpers shared by scripts: `chunked(cmd, key, list)` calls a variadic command in slices, so a large
 * page never hits Lua's `unpack` limit.
 */
export const LUA_CHUNKED = `
local function chunked(cmd, key, list, width)
  local n = #list
  local step = 2000 * (width or 1)
  local out = {}
  for i = 1, n, step do
    local slice = {}
    for j = i, math.min(i + step - 1, n) do slice[#slice + 1] = list[j] end
    local r = redis.call(cmd, key, unpack(slice))
    if type(r) == 'table' then for _, v in ipairs(r) do out[#out + 1] = v end end
  end
  return out
end
`;
