-- close the gate. KEYS: gate, leases. ARGV: owner, ttlMs, channel. Publishes 'closing' (lease pools hand back
-- their idle leases at once and stop handing out). -> leases in flight.
--@include "redis/lua/includes/now"
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
redis.call('PUBLISH', ARGV[3], 'closing')
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
return redis.call('ZCARD', KEYS[2])
