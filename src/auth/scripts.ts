import { LuaScript } from '../redis/script.js';

/**
 * The Lua scripts of the token protocol, in src/auth/lua/ (each file opens with its KEYS, ARGV and reply). Each runs
 * atomically in Redis, reads Redis's own clock, and purges expired leases before counting them.
 */

export const ACQUIRE = new LuaScript('auth/lua/acquire', { numKeys: 5 });
export const RELEASE = new LuaScript('auth/lua/release', { numKeys: 3 });
export const RENEW = new LuaScript('auth/lua/renew', { numKeys: 4 });
export const STATE = new LuaScript('auth/lua/state', { numKeys: 4 });
export const CLOSE_GATE = new LuaScript('auth/lua/close-gate', { numKeys: 2 });
export const LEASE_COUNT = new LuaScript('auth/lua/lease-count', { numKeys: 1 });
export const OPEN_GATE = new LuaScript('auth/lua/open-gate', { numKeys: 1 });
export const STORE = new LuaScript('auth/lua/store', { numKeys: 4 });
export const RECORD_FAILURE = new LuaScript('auth/lua/record-failure', { numKeys: 2 });
