-- KEYS: an old id map. ARGV: ids. Drops the hash side of their entries, keeping the uuid; an entry left empty is
-- deleted.
--@include "state/lua/includes/helpers"
for _, id in ipairs(ARGV) do
  local old = redis.call('HGET', KEYS[1], id)
  if old then
    local bar = string.find(old, '|', 1, true)
    if not bar then corrupt(KEYS[1], id) end
    local uuid = string.sub(old, 1, bar - 1)
    if uuid == '' then redis.call('HDEL', KEYS[1], id) else redis.call('HSET', KEYS[1], id, uuid .. '|') end
  end
end
return #ARGV
