-- KEYS: a packed map, an old hash. ARGV: a segment. Records holding it: packed, and in the old hash.
--@include "state/lua/includes/packed"
local meta = redis.call('HGET', KEYS[1], 'm')
local n = 0
if meta then
  local c = { string.match(meta, '^%d+ %d+ %d+ (%d+) (%d+) (%d+)$') }
  if #c ~= 3 then corrupt(KEYS[1], 'm') end
  n = tonumber(c[tonumber(ARGV[1])])
end
return n + redis.call('HLEN', KEYS[2])
