-- record a refusal of the credentials, with exponential cooldown (restarting at 1 when the secret changed);
-- opens our gate and wakes the waiters. KEYS: failure, gate. ARGV: owner, reason, fingerprint, baseMs, maxMs, channel.
-- -> {failures, nextAttemptAt}
--@include "redis/lua/includes/now"
local n = 1
if redis.call('HGET', KEYS[1], 'secretFingerprint') == ARGV[3] then
  n = (tonumber(redis.call('HGET', KEYS[1], 'failures')) or 0) + 1
end
local cooldown = math.min(tonumber(ARGV[4]) * math.pow(2, n - 1), tonumber(ARGV[5]))
local nextAt = now + math.floor(cooldown)
redis.call('HSET', KEYS[1], 'reason', ARGV[2], 'failures', n, 'nextAttemptAt', nextAt, 'secretFingerprint', ARGV[3], 'at', now)
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('PUBLISH', ARGV[6], 'failed')
return {n, nextAt}
