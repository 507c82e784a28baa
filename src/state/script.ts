/**
 * The state room's Lua, over the one script helper (src/redis/script.ts): a state script's `corrupt(key,
 * field)` error reply comes back as a StateCorruptError, and LUA_HELPERS are the Lua functions state scripts
 * share.
 */
import { LuaScript } from '../redis/script.js';
import { StateCorruptError } from './stored.js';

/** A Lua script of the state room (its STATE_CORRUPT replies become StateCorruptErrors). */
export function stateScript(source: string): LuaScript {
  return new LuaScript(source, { mapError: asCorrupt });
}

/** A script's `corrupt(key, field)` error reply, as a StateCorruptError. */
function asCorrupt(err: Error): StateCorruptError | undefined {
  const m = /^STATE_CORRUPT (\S+) (.*?)(?: script: [0-9a-f]{40}.*)?$/s.exec(err.message);
  return m ? new StateCorruptError(m[1] ?? '?', m[2], 'stored value does not fit its format') : undefined;
}

/**
 * Lua helpers shared by scripts: `corrupt(key, field)` raises the error reply a state script turns into a
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
