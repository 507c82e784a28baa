-- KEYS: the tenant's intents. Begins the intents of ids that have none; an intent already there is left as it was
-- and returned (its name is the one a lookup must use). ARGV: id, value pairs. Returns id, old value pairs of the
-- intents found.
local found = {}
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old then
    found[#found + 1] = ARGV[i]
    found[#found + 1] = old
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return found
