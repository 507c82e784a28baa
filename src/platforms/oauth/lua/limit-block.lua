-- Sets a block only when it lasts longer than the one already there. KEYS: block. ARGV: ms.
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return 1
