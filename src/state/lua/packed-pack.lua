-- ARGV: the map's spec with its old hashes (includes/packed-old), then ids: each id's entries in the old hashes
-- move into its packed value. Run by migrate-keys (src/state/old-hashes.ts), never by the worker.
--@include "state/lua/includes/packed-record"
--@include "state/lua/includes/packed-old"
local m = oldmap(ARGV[1])
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local h = redit(m, id)
  local t, found = oldread(m, id)
  if h.had then
    -- Already packed (written since): the packed value is the newer; an old entry left behind only goes.
    for _, kv in ipairs(found or {}) do m.moved[#m.moved + 1] = kv end
    if found then m.changed = true end
  elseif found then
    h.t = t
    for _, kv in ipairs(found) do m.moved[#m.moved + 1] = kv end
    rsave(m, h)
    n = n + 1
  end
end
pflush(m)
olddrop(m)
return n
