-- Starts the chain, or restarts it when the tenants file names a refresh token never seen before. KEYS: oauth.
-- ARGV: fingerprint, state, the fingerprint under the previous key ('' when no rotation is under way: decision 0163).
-- -> 1 started, 2 restarted, 0 a seed seen before (under either key; seen under the old one only, the new
-- fingerprint is added, so the chain still knows it once the old key is gone).
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
if ARGV[3] ~= '' then
  local old = seed == ARGV[3]
  for fp in string.gmatch(seen, '%S+') do
    if fp == ARGV[3] then old = true end
  end
  if old then
    local known = ARGV[1] .. ' ' .. seen
    if string.len(known) > 4000 then known = string.sub(known, 1, 4000) end
    if seed == ARGV[3] then
      redis.call('HSET', KEYS[1], 'seed', ARGV[1], 'seen', known)
    else
      redis.call('HSET', KEYS[1], 'seen', known)
    end
    return 0
  end
end
local list = ARGV[1] .. ' ' .. seen
if string.len(list) > 4000 then list = string.sub(list, 1, 4000) end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(v) + 1), 'seed', ARGV[1], 'seen', list, 'state', ARGV[2])
redis.call('HDEL', KEYS[1], 'undecryptable')
return 2
