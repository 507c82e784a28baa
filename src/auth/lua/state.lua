-- state (never returns the token). KEYS: token, gate, leases, failure.
-- -> {now, version, issuedAt, expiresAt, hasToken, gatePttl, leases, fReason, fFailures, fNextAttemptAt, fFingerprint,
--     margin, leaseFloor}
--@include "redis/lua/includes/now"
local t = redis.call('HMGET', KEYS[1], 'version', 'issuedAt', 'expiresAt', 'margin', 'leaseFloor')
local has = redis.call('HEXISTS', KEYS[1], 'token')
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local f = redis.call('HMGET', KEYS[4], 'reason', 'failures', 'nextAttemptAt', 'secretFingerprint')
return {tostring(now), t[1] or '', t[2] or '', t[3] or '', tostring(has), tostring(redis.call('PTTL', KEYS[2])),
  tostring(redis.call('ZCARD', KEYS[3])), f[1] or '', f[2] or '', f[3] or '', f[4] or '', t[4] or '', t[5] or ''}
