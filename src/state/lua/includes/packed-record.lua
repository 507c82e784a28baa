-- One record of a packed map by id: `rget(m, id)` its three segments (false: absent), `rraw(m, id)` its value as
-- stored, both nil for an id the map does not hold; `redit(m, id)` an edit handle whose `t` holds the segments,
-- `rsave(m, h)` stores it (kept in the map's buckets until pflush, with the meta counts it changes).
--@include "state/lua/includes/packed-map"
local function rget(m, id)
  local k = pk(id)
  local v = bget(bucket(m, addr(m, k)), k)
  if v then return segs(m.key, id, v) end
  return nil
end
local function rraw(m, id)
  local k = pk(id)
  return (bget(bucket(m, addr(m, k)), k))
end
local function redit(m, id)
  local k = pk(id)
  local b = addr(m, k)
  local bk = bucket(m, b)
  local v, s, e = bget(bk, k)
  local h = { b = b, bk = bk, id = id, k = k, had = v ~= nil, s = s, e = e }
  if v then
    h.t = segs(m.key, id, v)
    h.was = { h.t[1] ~= false, h.t[2] ~= false, h.t[3] ~= false }
  else
    h.t = { false, false, false }
    h.was = { false, false, false }
  end
  return h
end
local function rsave(m, h)
  for k = 1, 3 do
    local now = h.t[k] ~= false and h.t[k] ~= nil
    if now ~= h.was[k] then m.c[k] = m.c[k] + (now and 1 or -1) end
  end
  local v = unsegs(h.t)
  if v then
    if not h.had then m.n = m.n + 1 end
    bset(h.bk, h.k, v, h.s, h.e)
  elseif h.had then
    bset(h.bk, h.k, false, h.s, h.e)
    m.n = m.n - 1
  end
  m.dirty[h.b] = true
  m.changed = true
end
