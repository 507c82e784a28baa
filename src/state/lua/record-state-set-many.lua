-- Merges each entry into what is stored: a given uuid or hash replaces that side, an absent one keeps it.
-- Entries for the same id within one call apply in order. KEYS: the packed map, then the tenant's
-- intents. ARGV: the packed map's spec, the number of quads, then id, uuid part, hash part, mirror segment quads
-- ('' = keep; a part is `B` + bytes or `T` + text; the mirror as RecordMirror writes it), then the ids whose intents
-- end (KEYS' last) once the id-map entries are written.
--@include "state/lua/includes/packed-record"
--@include "state/lua/includes/packed-idmap"
--@include "state/lua/includes/packed-mirror"
local m = pmap(ARGV[1])
local quads = tonumber(ARGV[2])
local seen, written = {}, 0
for i = 1, quads do
  local id, nu, nh, ms = ARGV[4 * i - 1], ARGV[4 * i], ARGV[4 * i + 1], ARGV[4 * i + 2]
  local h = redit(m, id)
  local f, u, hh = idparts(m.key, id, h.t[1])
  if nu ~= '' then
    local bin = string.sub(nu, 1, 1) == 'B' and 1 or 0
    local v = string.sub(nu, 2)
    if u ~= '' and (v ~= u or bin ~= f % 2) then unshare(m.key, id, h.t) end
    f = f - f % 2 + bin
    u = v
  end
  if nh ~= '' then
    f = f % 2 + (string.sub(nh, 1, 1) == 'B' and 2 or 0)
    hh = string.sub(nh, 2)
  end
  h.t[1] = idseg(f, u, hh)
  if ms ~= '' then setmirror(m, h, ms) end
  rsave(m, h)
  if not seen[id] then seen[id] = true; written = written + 1 end
end
pflush(m)
local ended = {}
for i = 4 * quads + 3, #ARGV do ended[#ended + 1] = ARGV[i] end
if #ended > 0 then chunked('HDEL', KEYS[#KEYS], ended) end
return written
