-- KEYS: the requests HASH. ARGV: field, state, value. Sets a request's record only when its state is still ARGV[2].
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local ok, d = pcall(cjson.decode, v)
if not ok or type(d) ~= 'table' or d.state ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
