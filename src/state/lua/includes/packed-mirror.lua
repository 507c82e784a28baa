-- The mirror segment's uuid cell shared with the id map: a mirror uuid equal to the id map's is stored as `=`
-- (the uuid once a record), and written back before the id map's uuid changes.
--@include "state/lua/includes/packed-idmap"
-- The id map's uuid as a mirror uuid cell's content ('' when there is none).
local function uuidcell(key, id, t)
  local f, u = idparts(key, id, t[1])
  if u == '' then return '' end
  return ((f % 2 == 1) and 'B' or 'T') .. u
end
-- A mirror whose uuid cell is '=' (the id map's uuid) gets the uuid itself: before the id map's uuid changes.
local function unshare(key, id, t)
  if not t[2] or string.sub(t[2], 1, 1) ~= 'C' then return end
  local l, i = vget(t[2], 2)
  if l ~= 9 or string.sub(t[2], i, i) ~= '=' then return end
  local cell = uuidcell(key, id, t)
  t[2] = 'C' .. vput(8 * #cell + 1) .. cell .. string.sub(t[2], i + 1)
end
-- Sets an edited record's mirror segment; its uuid cell as '=' when it is the id map's uuid (stored once).
local function setmirror(m, h, seg)
  local l, j = vget(seg, 2)
  if l and l >= 9 and (l - 1) % 8 == 0 then
    local n = (l - 1) / 8
    local own = uuidcell(m.key, h.id, h.t)
    if own ~= '' and ssub(seg, j, j + n - 1) == own then seg = 'C' .. vput(9) .. '=' .. ssub(seg, j + n) end
  end
  h.t[2] = seg
end
