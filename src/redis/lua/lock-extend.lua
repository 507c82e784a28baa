-- Extends a lock only for its owner (compare-and-expire). KEYS: lock. ARGV: owner, ttl ms. -> 1 when extended.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end
