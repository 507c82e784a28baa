-- renew a pool's leases. KEYS: token, gate, leases, limitWait. ARGV: leaseTtlMs, version, channel, nRenew, leaseId...:
-- the first `nRenew` ids get a new expiry (never past the token's), the rest are released. Nothing is renewed while
-- the gate is closed or when the token is no longer `version` or within its lease floor.
-- -> {'ok', now, expiresAt, leaseFloor, lostId...} (lost: expired before the renewal) | {'gate'} | {'stale'}
--@include "redis/lua/includes/now"
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
return out
