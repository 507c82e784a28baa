-- Starts the chain, or restarts it when the tenants file names a refresh token never seen before. KEYS: oauth.
-- ARGV: fingerprint, state. -> 1 started, 2 restarted, 0 a seed seen before.
local v = redis.call('HGET', KEYS[1], 'v')
if not v then
  redis.call('HSET', KEYS[1], 'v', '1', 'seed', ARGV[1], 'seen', ARGV[1], 'state', ARGV[2])
  return 1
end
local seed = redis.call('HGET', KEYS[1], 'seed')
if seed == ARGV[1] then return 0 end
local seen = redis.call('HGET', KEYS[1], 'seen') or ''
for fp in string.gmatch(seen, '%S+') do
  if fp == ARGV[1] then return 0 end
end
local list = ARGV[1] .. ' ' .. seen
if string.len(list) > 4000 then list = string.sub(list, 1, 4000) end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(v) + 1), 'seed', ARGV[1], 'seen', list, 'state', ARGV[2])
return 2
