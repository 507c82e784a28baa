-- KEYS: hash, all, contacts, invoices, payments. ARGV: padded cutoff, limit. Removes entries last tried before the
-- cutoff.
--@include "state/lua/includes/dead-letters-head"
local members = redis.call('ZRANGEBYLEX', KEYS[2], '-', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(members) do
  local k = string.sub(m, 17)
  for i = 2, #KEYS do redis.call('ZREM', KEYS[i], m) end
  redis.call('HDEL', KEYS[1], k)
end
return #members
