-- ARGV: the map's spec, then ids: each id's entries in the old hashes move into its packed value.
--@include "state/lua/includes/packed"
local m = pmap(ARGV[1])
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local h = redit(m, id)
  if h.had then
    -- Already packed (written since): the packed value is the newer; an old entry left behind only goes.
    local _, found = legacy(m, id)
    for _, kv in ipairs(found or {}) do m.moved[#m.moved + 1] = kv end
    if found then m.changed = true end
  elseif h.found then
    rsave(m, h)
    n = n + 1
  end
end
pflush(m)
return n
