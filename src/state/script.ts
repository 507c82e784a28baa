/**
 * A Lua script run by SHA (EVALSHA), falling back to EVAL when the server does not know it yet (a new or
 * restarted Redis). One round trip in the steady state. Does not touch the client (no `defineCommand`), so
 * stores can share an injected connection.
 */
import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { StateCorruptError } from './stored.js';

export type LuaArg = string | number;

export class LuaScript {
  readonly sha: string;
  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly LuaArg[]): Promise<unknown> {
    try {
      try {
        return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return await redis.eval(this.source, keys.length, ...keys, ...args);
      }
    } catch (err) {
      throw asCorrupt(err) ?? err;
    }
  }
}

/** A script's `corrupt(key, field)` error reply, as a StateCorruptError. */
function asCorrupt(err: unknown): StateCorruptError | undefined {
  if (!(err instanceof Error)) return undefined;
  const m = /^STATE_CORRUPT (\S+) (.*?)(?: script: [0-9a-f]{40}.*)?$/s.exec(err.message);
  return m ? new StateCorruptError(m[1] ?? '?', m[2], 'stored value does not fit its format') : undefined;
}

/**
 * Lua helpers shared by scripts: `corrupt(key, field)` raises the error reply `run` turns into a
 * StateCorruptError; `chunked(cmd, key, list)` calls a variadic command in slices, so a large page never
 * hits Lua's `unpack` limit.
 */
export const LUA_HELPERS = `
local function corrupt(key, field)
  error({ err = 'STATE_CORRUPT ' .. key .. ' ' .. field })
end
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
