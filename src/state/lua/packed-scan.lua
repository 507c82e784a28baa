-- ARGV: spec, segment (1-3), first residue, max records, the walk's n0 (0: the map's n0 now, at the first call).
-- A walk goes residue by residue of bucket numbers mod its n0: buckets split into b + n0 and n0 only doubles, so
-- a record's bucket keeps its residue, and each call reads all buckets of the residues it covers at once: a record
-- is seen exactly once even while buckets split. Reply: { next residue (-1: done), the walk's n0, id, value, ... }
-- of the records holding the segment.
--@include "state/lua/includes/packed-map"
local m = pmap(ARGV[1])
local seg, r, max, n0s = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
if n0s == 0 then n0s = m.n0 end
local total = m.n0 + m.split
local out = { '', tostring(n0s) }
local n = 0
while r < n0s and n < max do
  local b = r
  while b < total do
    local ks, vs = bentries(bucket(m, b))
    for j = 1, #ks do
      local id = unpk(ks[j])
      local t = segs(m.key, id, vs[j])
      if t[seg] then out[#out + 1] = id; out[#out + 1] = vs[j]; n = n + 1 end
    end
    b = b + n0s
  end
  r = r + 1
end
out[1] = tostring(r < n0s and r or -1)
return out
