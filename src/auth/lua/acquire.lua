-- acquire. KEYS: token, gate, leases, limitWait, failure.
-- ARGV: leaseId, leaseTtlMs, limit, secretFingerprint[, want, need, channel].
-- Takes up to `want` leases (default 1) in one step: `leaseId` itself when one, else `leaseId.1` .. `leaseId.n`
-- (a process's lease pool), as many as the in-flight limit leaves. When fewer than `need` (default 1) are left,
-- a waiter is marked (limitWait) and, with a channel, 'limited' is published so pools hand back idle leases.
-- A token within its lease floor (`leaseFloor` ms of life left, stored with it) is not leased: it counts as
-- missing, so the caller asks for a rotation and waits. A lease lives `leaseTtlMs`, never past the token's expiry.
-- -> {'ok', token, version, granted, now, expiresAt, leaseFloor} | {'gate'} | {'limit'} | {'missing'}
--    | {'failed', reason, failures, nextAttemptAt}
--@include "redis/lua/includes/now"
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
return {'ok', t[1], t[2], n, now, exp, tonumber(t[4]) or 0}
