-- KEYS: hash, all, contacts, invoices, payments. ARGV: keys. Returns how many existed.
--@include "state/lua/includes/dead-letters-head"
local n = 0
for _, k in ipairs(ARGV) do
  local old = redis.call('HGET', KEYS[1], k)
  if old then
    local _, _, t = head(k, old)
    unindex(k, t)
    redis.call('HDEL', KEYS[1], k)
    n = n + 1
  end
end
return n
