/**
 * The state room's Lua, over the one script helper (src/redis/script.ts): a state script is a file of src/state/lua/,
 * its `corrupt(key, field)` error reply (src/state/lua/includes/helpers.lua) comes back as a StateCorruptError, and
 * its `--@define` lines may name the constants the state's Lua shares with TypeScript (STATE_LUA_DEFINES).
 */
import type { LuaDefines } from '../redis/lua-loader.js';
import { LuaScript } from '../redis/script.js';
import { LOAD } from './packed-codec.js';
import { StateCorruptError } from './stored.js';

/** The TypeScript constants the state's Lua reads: the packed maps' records per bucket (src/state/packed-codec.ts). */
export const STATE_LUA_DEFINES: LuaDefines = { LOAD };

/** A Lua script of the state room, by its file (`state/lua/pending-add`): STATE_CORRUPT replies become StateCorruptErrors. */
export function stateScript(name: string): LuaScript {
  return new LuaScript(name, { mapError: asCorrupt, defines: STATE_LUA_DEFINES });
}

/** A script's `corrupt(key, field)` error reply, as a StateCorruptError. */
function asCorrupt(err: Error): StateCorruptError | undefined {
  const m = /^STATE_CORRUPT (\S+) (.*?)(?: script: [0-9a-f]{40}.*)?$/s.exec(err.message);
  return m ? new StateCorruptError(m[1] ?? '?', m[2], 'stored value does not fit its format') : undefined;
}
