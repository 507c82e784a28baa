-- Starts the chain again from a code exchange (a connect link), while ARGV[1] holds the lock KEYS[2]. The tenants
-- file's seed (ARGV[3], empty when it has none) is counted as seen, so it does not restart the chain over this one.
-- KEYS: oauth, lock. ARGV: owner, seed (the connect marker), file seed, state. -> the new version, -1 lock lost.
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
local seen = redis.call('HGET', KEYS[1], 'seen') or ''
local list = ARGV[2]
if ARGV[3] ~= '' then list = list .. ' ' .. ARGV[3] end
if seen ~= '' then list = list .. ' ' .. seen end
if string.len(list) > 4000 then list = string.sub(list, 1, 4000) end
redis.call('HSET', KEYS[1], 'v', tostring(v + 1), 'seed', ARGV[2], 'seen', list, 'state', ARGV[4])
redis.call('HDEL', KEYS[1], 'undecryptable')
return v + 1
