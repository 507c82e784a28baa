-- The items' mirror cells replace what the mirror held of them. Shares the uuid with the id map: a mirror put whose
-- uuid is the record's id-map uuid stores `=` instead (the uuid once a record); before the id map's uuid changes,
-- record-state-set-many writes it back (`unshare`). KEYS: the packed map. ARGV: the map's spec,
-- then (id, `C` segment) pairs.
--@include "state/lua/includes/packed-record"
--@include "state/lua/includes/packed-mirror"
local m = pmap(ARGV[1])
for i = 2, #ARGV, 2 do
  local h = redit(m, ARGV[i])
  setmirror(m, h, ARGV[i + 1])
  rsave(m, h)
end
pflush(m)
return (#ARGV - 1) / 2
