-- KEYS: the tenant's pending invoices. ARGV: (id, firstSeenAt, json) triples. A waiting invoice keeps its earliest
-- firstSeenAt and takes the latest record.
for i = 1, #ARGV, 3 do
  local id, seen, json = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local old = redis.call('HGET', KEYS[1], id)
  if old then
    local t = string.match(old, '^(%d+)|')
    if t and tonumber(t) < tonumber(seen) then seen = t end
  end
  redis.call('HSET', KEYS[1], id, seen .. '|' .. json)
end
return #ARGV / 3
