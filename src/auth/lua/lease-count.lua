-- leases in flight. KEYS: leases.
--@include "redis/lua/includes/now"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
