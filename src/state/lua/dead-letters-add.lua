-- KEYS: hash, all, contacts, invoices, payments. ARGV: (key, entity index, padded at, json) groups.
--@include "state/lua/includes/dead-letters-head"
for i = 1, #ARGV, 4 do
  local k, e, at, json = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3]
  local attempts, first = 1, at
  local old = redis.call('HGET', KEYS[1], k)
  if old then
    local a, f, t = head(k, old)
    attempts, first = a + 1, f
    unindex(k, t)
  end
  redis.call('HSET', KEYS[1], k, attempts .. '|' .. first .. '|' .. at .. '|' .. json)
  redis.call('ZADD', KEYS[2], 0, at .. '|' .. k)
  redis.call('ZADD', KEYS[2 + e], 0, at .. '|' .. k)
end
return #ARGV / 4
