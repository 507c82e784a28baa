-- Releases a lock only for its owner (compare-and-delete). KEYS: lock. ARGV: owner. -> 1 when released.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end
