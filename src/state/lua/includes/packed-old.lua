-- The hashes versions before packed records kept (id map `i`, mirror `m`, payment ledger `p`, invoice ledger `v`),
-- read only to pack them: packed-pack, which migrate-keys runs. The worker's scripts never read them (it does not
-- start while a configured tenant still has one: src/state/old-hashes.ts), so they pay nothing for them.
-- `oldmap(spec)` opens a packed map and its old hashes, e.g. `1,2i,3m,4v` (KEYS[1] the packed map, then each old
-- hash with its kind); `oldread(m, id)` gives a record as the old hashes hold it, re-packed; `olddrop(m)` deletes
-- the old entries marked moved, after pflush has written their packed values.
--@include "state/lua/includes/packed-map"
--@include "state/lua/includes/packed-idlist"
local function oldmap(spec)
  local main, olds = nil, {}
  for part in string.gmatch(spec, '[^,]+') do
    local idx, kind = string.match(part, '^(%d+)(%a?)$')
    if not idx then error('bad packed-map spec ' .. spec) end
    if kind == '' then main = idx
    elseif redis.call('EXISTS', KEYS[tonumber(idx)]) == 1 then olds[#olds + 1] = { key = KEYS[tonumber(idx)], kind = kind } end
  end
  if not main then error('bad packed-map spec ' .. spec) end
  local m = pmap(main)
  m.olds, m.moved = olds, {}
  return m
end
-- The record as the old hashes hold it (nil: in none), and where it was found ({ key, id } pairs).
local function oldread(m, id)
  if #m.olds == 0 then return nil end
  local t, any, found = { false, false, false }, false, {}
  for _, o in ipairs(m.olds) do
    local raw = redis.call('HGET', o.key, id)
    if raw then
      any = true
      if o.kind == 'i' then
        local bar = string.find(raw, '|', 1, true)
        if not bar then corrupt(o.key, id) end
        local u = string.sub(raw, 1, bar - 1)
        t[1] = string.char(0) .. vput(#u) .. u .. string.sub(raw, bar + 1)
        if t[1] == string.char(0, 0) then t[1] = false end
      elseif o.kind == 'm' then
        t[2] = 'J' .. raw
      elseif o.kind == 'p' then
        if not string.match(raw, '^[01]|[^|]+|.') then corrupt(o.key, id) end
        t[3] = raw
      else
        local ok, l = pcall(cjson.decode, raw)
        if not ok or type(l) ~= 'table' then corrupt(o.key, id) end
        t[3] = lenc(l)
        if t[3] == '' then t[3] = false end
      end
      found[#found + 1] = { o.key, id }
    end
  end
  if not any then return nil end
  return t, found
end
-- After pflush: a script that fails before (a corrupt value further on) has deleted nothing, as Redis does not
-- roll a script back, and an entry whose record was not saved stays where it is.
local function olddrop(m)
  for _, kv in ipairs(m.moved) do redis.call('HDEL', kv[1], kv[2]) end
  m.moved = {}
end
