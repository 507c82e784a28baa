-- KEYS: the tenant's cursors. ARGV: field, expected value ('' = absent), new value. HSET field to ARGV[3] only if it
-- still holds ARGV[2]. -> 1 when set.
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
