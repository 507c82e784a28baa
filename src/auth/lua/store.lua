-- store a new token: compare-and-set on the version, fenced by the lock; opens our gate, clears the failure
-- state and wakes the waiters, all at once. KEYS: token, lock, gate, failure.
-- ARGV: owner, expectedVersion ('' = no token yet), token, expiresAt, channel, margin, leaseFloor (ms; the token's
-- plan: rotate `margin` before expiry, lease no more within `leaseFloor` of it).
-- -> {version, now} on success, {-1} lock lost, {-2, storedVersion} version moved.
--@include "redis/lua/includes/now"
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
return {nv, now}
