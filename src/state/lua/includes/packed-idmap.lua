-- The id-map segment of a packed record (its first): flags (bit 1: the uuid as 16 bytes, bit 2: the hash as 9),
-- the uuid behind its length, then the hash.
--@include "state/lua/includes/packed-codec"
-- An id-map segment's parts: flags, uuid, hash.
local function idparts(key, id, s)
  if not s then return 0, '', '' end
  local l, i = vget(s, 2)
  if not l or i + l - 1 > #s then corrupt(key, id) end
  return string.byte(s, 1), string.sub(s, i, i + l - 1), string.sub(s, i + l)
end
local function idseg(f, u, h)
  if u == '' and h == '' then return false end
  return string.char(f) .. vput(#u) .. u .. h
end
