-- The event log's add (src/state/event-log.ts). KEYS: seq, order, data, status. ARGV: id, now, tenant, type, event
-- json, delivery json, max count, min recorded time. An id kept already is not added again (returns {0, its seq});
-- else the next sequence number orders it, and the log is trimmed: the oldest past the count, then those recorded
-- before the min time (at most 1000 a call: the next add goes on). Returns {1, seq}.
local function drop(id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
end
local kept = redis.call('HGET', KEYS[3], ARGV[1])
if kept then return {0, tonumber(string.match(kept, '^(%d+)|'))} end
local seq = redis.call('INCR', KEYS[1])
redis.call('ZADD', KEYS[2], seq, ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], seq .. '|' .. ARGV[2] .. '|' .. ARGV[3] .. '|' .. ARGV[4] .. '|' .. ARGV[5])
redis.call('HSET', KEYS[4], ARGV[1], ARGV[6])
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[7])
if over > 0 then
  for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, math.min(over, 1000) - 1)) do drop(id) end
end
local minAt, n = tonumber(ARGV[8]), 0
while n < 1000 do
  local ids = redis.call('ZRANGE', KEYS[2], 0, 99)
  if #ids == 0 then break end
  local young = false
  for _, id in ipairs(ids) do
    local v = redis.call('HGET', KEYS[3], id)
    local at = v and tonumber(string.match(v, '^%d+|(%d+)|'))
    if at and at >= minAt then
      young = true
      break
    end
    drop(id)
    n = n + 1
  end
  if young then break end
end
return {1, seq}
