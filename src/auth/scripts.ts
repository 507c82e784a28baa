import { LuaScript, NOW_MS } from '../redis/script.js';

/**
 * The Lua scripts of the token protocol. Each runs atomically in Redis, reads Redis's own clock, and purges
 * expired leases before counting them. Key order is given above each script.
 */

/**
 * acquire. KEYS: token, gate, leases, limitWait, failure.
 * ARGV: leaseId, leaseTtlMs, limit, secretFingerprint[, want, need, channel].
 * Takes up to `want` leases (default 1) in one step: `leaseId` itself when one, else `leaseId.1` .. `leaseId.n`
 * (a process's lease pool), as many as the in-flight limit leaves. When fewer than `need` (default 1) are left,
 * a waiter is marked (limitWait) and, with a channel, 'limited' is published so pools hand back idle leases.
 * A token within its lease floor (`leaseFloor` ms of life left, stored with it) is not leased: it counts as
 * missing, so the caller asks for a rotation and waits. A lease lives `leaseTtlMs`, never past the token's expiry.
 * -> {'ok', token, version, granted, now, expiresAt, leaseFloor} | {'gate'} | {'limit'} | {'missing'}
 *    | {'failed', reason, failures, nextAttemptAt}
 */
export const ACQUIRE = new LuaScript(
  `${NOW_MS}
if redis.call('EXISTS', KEYS[2]) == 1 then return {'gate'} end
local t = redis.call('HMGET', KEYS[1], 'token', 'version', 'expiresAt', 'leaseFloor')
local exp = tonumber(t[3])
if not t[1] or not exp or exp - (tonumber(t[4]) or 0) <= now then
  local f = redis.call('HMGET', KEYS[5], 'nextAttemptAt', 'secretFingerprint', 'reason', 'failures')
  local nextAt = tonumber(f[1])
  if nextAt and nextAt > now and f[2] == ARGV[4] then
    return {'failed', f[3] or 'credentials rejected', f[4] or '1', f[1]}
  end
  return {'missing'}
end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local want = tonumber(ARGV[5]) or 1
local need = tonumber(ARGV[6]) or 1
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[3])
local n = math.min(want, free)
if n < need then
  redis.call('SET', KEYS[4], '1', 'PX', 1000)
  if ARGV[7] then redis.call('PUBLISH', ARGV[7], 'limited') end
end
if n < 1 then return {'limit'} end
local ttl = tonumber(ARGV[2])
local score = math.min(now + ttl, exp)
if want == 1 then
  redis.call('ZADD', KEYS[3], score, ARGV[1])
else
  for i = 1, n do redis.call('ZADD', KEYS[3], score, ARGV[1] .. '.' .. i) end
end
if redis.call('PTTL', KEYS[3]) < score - now then redis.call('PEXPIRE', KEYS[3], score - now) end
return {'ok', t[1], t[2], n, now, exp, tonumber(t[4]) or 0}`,
  { numKeys: 5 },
);

/**
 * release. KEYS: leases, gate, limitWait. ARGV: channel, leaseId... Publishes 'released' only when someone listens
 * for it (a rotation draining, or a waiter under the in-flight limit).
 */
export const RELEASE = new LuaScript(
  `local removed = redis.call('ZREM', KEYS[1], unpack(ARGV, 2))
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('PUBLISH', ARGV[1], 'released')
end
return removed`,
  { numKeys: 3 },
);

/**
 * renew a pool's leases. KEYS: token, gate, leases, limitWait. ARGV: leaseTtlMs, version, channel, nRenew, leaseId...:
 * the first `nRenew` ids get a new expiry (never past the token's), the rest are released. Nothing is renewed while
 * the gate is closed or when the token is no longer `version` or within its lease floor.
 * -> {'ok', now, expiresAt, leaseFloor, lostId...} (lost: expired before the renewal) | {'gate'} | {'stale'}
 */
export const RENEW = new LuaScript(
  `${NOW_MS}
local nRenew = tonumber(ARGV[4])
local released = 0
for i = 5 + nRenew, #ARGV do released = released + redis.call('ZREM', KEYS[3], ARGV[i]) end
if released > 0 and (redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[4]) == 1) then
  redis.call('PUBLISH', ARGV[3], 'released')
end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'gate'} end
local t = redis.call('HMGET', KEYS[1], 'version', 'expiresAt', 'leaseFloor')
local exp = tonumber(t[2])
local floor = tonumber(t[3]) or 0
if t[1] ~= ARGV[2] or not exp or exp - floor <= now then return {'stale'} end
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local ttl = tonumber(ARGV[1])
local score = math.min(now + ttl, exp)
local out = {'ok', now, exp, floor}
for i = 5, 4 + nRenew do
  if redis.call('ZSCORE', KEYS[3], ARGV[i]) then redis.call('ZADD', KEYS[3], score, ARGV[i]) else out[#out + 1] = ARGV[i] end
end
if redis.call('PTTL', KEYS[3]) < score - now then redis.call('PEXPIRE', KEYS[3], score - now) end
return out`,
  { numKeys: 4 },
);

/**
 * state (never returns the token). KEYS: token, gate, leases, failure.
 * -> {now, version, issuedAt, expiresAt, hasToken, gatePttl, leases, fReason, fFailures, fNextAttemptAt, fFingerprint,
 *     margin, leaseFloor}
 */
export const STATE = new LuaScript(
  `${NOW_MS}
local t = redis.call('HMGET', KEYS[1], 'version', 'issuedAt', 'expiresAt', 'margin', 'leaseFloor')
local has = redis.call('HEXISTS', KEYS[1], 'token')
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local f = redis.call('HMGET', KEYS[4], 'reason', 'failures', 'nextAttemptAt', 'secretFingerprint')
return {tostring(now), t[1] or '', t[2] or '', t[3] or '', tostring(has), tostring(redis.call('PTTL', KEYS[2])),
  tostring(redis.call('ZCARD', KEYS[3])), f[1] or '', f[2] or '', f[3] or '', f[4] or '', t[4] or '', t[5] or ''}`,
  { numKeys: 4 },
);

/**
 * close the gate. KEYS: gate, leases. ARGV: owner, ttlMs, channel. Publishes 'closing' (lease pools hand back
 * their idle leases at once and stop handing out). -> leases in flight.
 */
export const CLOSE_GATE = new LuaScript(
  `${NOW_MS}
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
redis.call('PUBLISH', ARGV[3], 'closing')
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
return redis.call('ZCARD', KEYS[2])`,
  { numKeys: 2 },
);

/** leases in flight. KEYS: leases. */
export const LEASE_COUNT = new LuaScript(
  `${NOW_MS}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])`,
  { numKeys: 1 },
);

/** open the gate if we closed it. KEYS: gate. ARGV: owner, channel. -> 1 when opened. */
export const OPEN_GATE = new LuaScript(
  `if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'opened')
  return 1
end
return 0`,
  { numKeys: 1 },
);

/**
 * store a new token: compare-and-set on the version, fenced by the lock; opens our gate, clears the failure
 * state and wakes the waiters, all at once. KEYS: token, lock, gate, failure.
 * ARGV: owner, expectedVersion ('' = no token yet), token, expiresAt, channel, margin, leaseFloor (ms; the token's
 * plan: rotate `margin` before expiry, lease no more within `leaseFloor` of it).
 * -> {version, now} on success, {-1} lock lost, {-2, storedVersion} version moved.
 */
export const STORE = new LuaScript(
  `${NOW_MS}
local function open()
  if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
  redis.call('PUBLISH', ARGV[5], 'opened')
end
if redis.call('GET', KEYS[2]) ~= ARGV[1] then open() return {-1} end
local v = redis.call('HGET', KEYS[1], 'version')
if (v or '') ~= ARGV[2] then open() return {-2, v or ''} end
local nv = (tonumber(v) or 0) + 1
redis.call('HSET', KEYS[1], 'token', ARGV[3], 'version', nv, 'issuedAt', now, 'expiresAt', ARGV[4], 'margin', ARGV[6], 'leaseFloor', ARGV[7])
redis.call('DEL', KEYS[4])
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
redis.call('PUBLISH', ARGV[5], 'rotated')
return {nv, now}`,
  { numKeys: 4 },
);

/**
 * record a refusal of the credentials, with exponential cooldown (restarting at 1 when the secret changed);
 * opens our gate and wakes the waiters. KEYS: failure, gate. ARGV: owner, reason, fingerprint, baseMs, maxMs, channel.
 * -> {failures, nextAttemptAt}
 */
export const RECORD_FAILURE = new LuaScript(
  `${NOW_MS}
local n = 1
if redis.call('HGET', KEYS[1], 'secretFingerprint') == ARGV[3] then
  n = (tonumber(redis.call('HGET', KEYS[1], 'failures')) or 0) + 1
end
local cooldown = math.min(tonumber(ARGV[4]) * math.pow(2, n - 1), tonumber(ARGV[5]))
local nextAt = now + math.floor(cooldown)
redis.call('HSET', KEYS[1], 'reason', ARGV[2], 'failures', n, 'nextAttemptAt', nextAt, 'secretFingerprint', ARGV[3], 'at', now)
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('PUBLISH', ARGV[6], 'failed')
return {n, nextAt}`,
  { numKeys: 2 },
);
