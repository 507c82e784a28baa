-- What the dead-letter scripts share. KEYS: hash, all, contacts, invoices, payments. `head(k, v)`: a stored
-- value's `attempts|firstAt|at|` prefix, or a STATE_CORRUPT error naming the field; `unindex(k, t)`: the entry
-- leaves every index.
--@include "state/lua/includes/helpers"
local function head(k, v)
  local a, f, t = string.match(v, '^(%d+)|(%d+)|(%d+)|')
  if not a then corrupt(KEYS[1], k) end
  return tonumber(a), f, t
end
local function unindex(k, t)
  local m = t .. '|' .. k
  for i = 2, #KEYS do redis.call('ZREM', KEYS[i], m) end
end
