-- The Lua of packed maps, included by every packed script (the format: src/state/packed-codec.ts, which also holds
-- LOAD, defined below by the loader: src/state/script.ts). `pmap(spec)` opens one map: `spec` names its KEYS, e.g.
-- `1,2i,3m,4v` (KEYS[1] the packed map; KEYS[2] the old id map, 3 the old mirror, 4 the old invoice ledger; `p`
-- the old payment ledger). `redit(m, id)` gives an edit handle whose `t` holds the record's three segments
-- (false: absent), moving an old entry in; `rsave(m, h)` stores it; `pflush(m)` splits and writes the buckets
-- changed, once per script. `rget(m, id)` reads without moving (nil: unknown).
--@include "state/lua/includes/helpers"
--@define LOAD
local sbyte, ssub, tconcat = string.byte, string.sub, table.concat
local function vput(n)
  if n < 128 then return string.char(n) end
  local t = {}
  while n >= 128 do t[#t + 1] = string.char(128 + n % 128); n = math.floor(n / 128) end
  t[#t + 1] = string.char(n)
  return table.concat(t)
end
local function vget(s, i)
  local b = sbyte(s, i)
  if b and b < 128 then return b, i + 1 end
  local n, m = 0, 1
  while true do
    local b = sbyte(s, i)
    if not b then return nil, i end
    i = i + 1
    if b < 128 then return n + b * m, i end
    n = n + (b - 128) * m
    m = m * 128
  end
end
local function hid(s)
  local h = 5381
  for i = 1, #s do h = (h * 33 + sbyte(s, i)) % 2147483648 end
  return h
end
-- A record's key in its bucket: a canonical lower-case GUID id (Xero's) as 0xFF and its 16 bytes (0xFF is never
-- in UTF-8 text, so no other id reads as one), any other id as it is.
local GUID = '^' .. string.rep('[0-9a-f]', 8) .. '%-' .. string.rep('[0-9a-f]', 4) .. '%-' .. string.rep('[0-9a-f]', 4) .. '%-' .. string.rep('[0-9a-f]', 4) .. '%-' .. string.rep('[0-9a-f]', 12) .. '$'
local function pk(id)
  if #id ~= 36 or not string.find(id, GUID) then return id end
  local hex = string.gsub(id, '%-', '')
  return '\255' .. string.gsub(hex, '..', function(x) return string.char(tonumber(x, 16)) end)
end
local function unpk(k)
  if #k ~= 17 or string.byte(k, 1) ~= 255 then return k end
  local hex = {}
  for i = 2, 17 do hex[#hex + 1] = string.format('%02x', string.byte(k, i)) end
  local x = table.concat(hex)
  return string.sub(x, 1, 8) .. '-' .. string.sub(x, 9, 12) .. '-' .. string.sub(x, 13, 16) .. '-' .. string.sub(x, 17, 20) .. '-' .. string.sub(x, 21)
end
local function segs(key, id, v)
  local t = { false, false, false }
  local i, k, n = 1, 1, #v
  while i <= n and k <= 3 do
    local l
    l, i = vget(v, i)
    if not l or i + l - 2 > n then corrupt(key, id) end
    if l > 0 then t[k] = string.sub(v, i, i + l - 2); i = i + l - 1 end
    k = k + 1
  end
  if i <= n then corrupt(key, id) end
  return t
end
local function unsegs(t)
  local last = 0
  for k = 1, 3 do if t[k] then last = k end end
  if last == 0 then return nil end
  local parts = {}
  for k = 1, last do
    if t[k] then parts[#parts + 1] = vput(#t[k] + 1) .. t[k] else parts[#parts + 1] = '\0' end
  end
  return table.concat(parts)
end
-- A bucket as stored (its blob, never decoded whole) and the records changed since it was read: put, a key's
-- new value (false: removed); at, where a changed key's entry is in the blob (its first and last byte); add,
-- changed keys not in the blob, in order. Reading a record walks the blob's lengths to it; writing re-encodes only
-- the entries changed and copies the runs between them (a bucket holds ~LOAD records, a call changes one or two).
local function bopen(key, b, blob)
  return { key = key, b = b, blob = blob or '', put = {}, at = {}, add = {}, na = 0 }
end
-- The length at i of a bucket's next id or value, and where its bytes start (a bucket cut short: corrupt).
local function blen(bk, i)
  local l, at = vget(bk.blob, i)
  if not l or at + l - 1 > #bk.blob then corrupt(bk.key, 'bucket ' .. bk.b) end
  return l, at
end
-- Where key k is in the blob: its entry's first byte, its value's first and last (nil: not there).
local function bfind(bk, k)
  local blob, i, n, kl = bk.blob, 1, #bk.blob, #k
  local last = sbyte(k, kl)
  while i <= n do
    local s, l = i, nil
    l, i = blen(bk, i)
    local same = l == kl and (l == 0 or (sbyte(blob, i + l - 1) == last and ssub(blob, i, i + l - 1) == k))
    l, i = blen(bk, i + l)
    if same then return s, i, i + l - 1 end
    i = i + l
  end
  return nil
end
-- Key k's value (nil: absent) and, when it is read from the blob, its entry's first and last byte.
local function bget(bk, k)
  local v = bk.put[k]
  if v ~= nil then return v or nil end
  local s, vs, ve = bfind(bk, k)
  if s then return ssub(bk.blob, vs, ve), s, ve end
  return nil
end
-- Sets key k to v (false: removes it); s, e: where bget found it in the blob, if it did.
local function bset(bk, k, v, s, e)
  if bk.put[k] == nil then
    if not s then
      local f, _, ve = bfind(bk, k)
      s, e = f, ve
    end
    if s then bk.at[k] = { s, e } else bk.na = bk.na + 1; bk.add[bk.na] = k end
  end
  bk.put[k] = v
end
local function entry(k, v)
  return vput(#k) .. k .. vput(#v) .. v
end
local function bencode(bk)
  if next(bk.put) == nil then return bk.blob end
  local spans = {}
  for k, se in pairs(bk.at) do spans[#spans + 1] = { se[1], se[2], k } end
  if #spans > 1 then table.sort(spans, function(x, y) return x[1] < y[1] end) end
  local parts, from = {}, 1
  for _, sp in ipairs(spans) do
    if sp[1] > from then parts[#parts + 1] = ssub(bk.blob, from, sp[1] - 1) end
    local v = bk.put[sp[3]]
    if v then parts[#parts + 1] = entry(sp[3], v) end
    from = sp[2] + 1
  end
  if from <= #bk.blob then parts[#parts + 1] = ssub(bk.blob, from) end
  for j = 1, bk.na do
    local k = bk.add[j]
    local v = bk.put[k]
    if v then parts[#parts + 1] = entry(k, v) end
  end
  return tconcat(parts)
end
-- Every record of the bucket now, in order: keys, and for each its value and its entry's bytes.
local function bentries(bk)
  local ks, vs, es = {}, {}, {}
  local blob, i, n = bk.blob, 1, #bk.blob
  while i <= n do
    local s, l = i, nil
    l, i = blen(bk, i)
    local k = ssub(blob, i, i + l - 1)
    l, i = blen(bk, i + l)
    local v = bk.put[k]
    if v == nil then ks[#ks + 1] = k; vs[#vs + 1] = ssub(blob, i, i + l - 1); es[#es + 1] = ssub(blob, s, i + l - 1)
    elseif v then ks[#ks + 1] = k; vs[#vs + 1] = v; es[#es + 1] = entry(k, v) end
    i = i + l
  end
  for j = 1, bk.na do
    local k = bk.add[j]
    local v = bk.put[k]
    if v then ks[#ks + 1] = k; vs[#vs + 1] = v; es[#es + 1] = entry(k, v) end
  end
  return ks, vs, es
end
local function pmap(spec)
  local m = { olds = {}, cache = {}, dirty = {}, changed = false, moved = {} }
  for part in string.gmatch(spec, '[^,]+') do
    local idx, kind = string.match(part, '^(%d+)(%a?)$')
    if not idx then error('bad packed-map spec ' .. spec) end
    if kind == '' then m.key = KEYS[tonumber(idx)]
    elseif redis.call('EXISTS', KEYS[tonumber(idx)]) == 1 then m.olds[#m.olds + 1] = { key = KEYS[tonumber(idx)], kind = kind } end
  end
  local meta = redis.call('HGET', m.key, 'm')
  m.n0, m.split, m.n, m.c = 1, 0, 0, { 0, 0, 0 }
  if meta then
    local a, b, c, d, e, f = string.match(meta, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
    if not a then corrupt(m.key, 'm') end
    m.n0, m.split, m.n, m.c = tonumber(a), tonumber(b), tonumber(c), { tonumber(d), tonumber(e), tonumber(f) }
  end
  return m
end
local function addr(m, k)
  local h = hid(k)
  local b = h % m.n0
  if b < m.split then b = h % (2 * m.n0) end
  return b
end
local function bucket(m, b)
  local bk = m.cache[b]
  if not bk then
    bk = bopen(m.key, b, redis.call('HGET', m.key, tostring(b)))
    m.cache[b] = bk
  end
  return bk
end
-- A list of ids (an invoice's payments), each as its bucket key.
local function lenc(list)
  local parts = {}
  for _, p in ipairs(list) do
    local k = pk(p)
    parts[#parts + 1] = vput(#k) .. k
  end
  return table.concat(parts)
end
local function ldec(key, id, s)
  local out, i, n = {}, 1, #s
  while i <= n do
    local l
    l, i = vget(s, i)
    if not l or i + l - 1 > n then corrupt(key, id) end
    out[#out + 1] = unpk(string.sub(s, i, i + l - 1))
    i = i + l
  end
  return out
end
-- The record as the old hashes hold it (nil: in none), and where it was found ({ key, id } pairs).
local function legacy(m, id)
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
local function rget(m, id)
  local k = pk(id)
  local v = bget(bucket(m, addr(m, k)), k)
  if v then return segs(m.key, id, v) end
  return (legacy(m, id))
end
-- A record's value as stored (nil: unknown): packed as it is (the reader checks it), an old entry re-packed.
local function rraw(m, id)
  local k = pk(id)
  local v = bget(bucket(m, addr(m, k)), k)
  if v then return v end
  local t = legacy(m, id)
  return t and unsegs(t) or nil
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
    local t, found = legacy(m, id)
    h.t = t or { false, false, false }
    h.found = found
    h.was = { false, false, false }
  end
  return h
end
-- Stores an edit. The old hashes' entries it was read from are deleted by pflush, after the packed buckets are
-- written (a script that fails before, on a corrupt value further on, has written nothing: Redis does not roll a
-- script back), and only for records saved (an edit left unsaved leaves them where they are).
local function rsave(m, h)
  if h.found then
    for _, kv in ipairs(h.found) do m.moved[#m.moved + 1] = kv end
    h.found = nil
  end
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
local function psplit(m)
  local s = m.split
  local n2 = 2 * m.n0
  local ks, _, es = bentries(bucket(m, s))
  local a, z = {}, {}
  for j = 1, #ks do
    if hid(ks[j]) % n2 == s then a[#a + 1] = es[j] else z[#z + 1] = es[j] end
  end
  m.cache[s] = bopen(m.key, s, tconcat(a))
  m.cache[s + m.n0] = bopen(m.key, s + m.n0, tconcat(z))
  m.dirty[s] = true
  m.dirty[s + m.n0] = true
  m.split = s + 1
  if m.split == m.n0 then m.n0 = n2; m.split = 0 end
end
local function pflush(m)
  if not m.changed then return end
  local guard = 0
  while m.n > LOAD * (m.n0 + m.split) and guard < 64 do psplit(m); guard = guard + 1 end
  local flat, gone = {}, {}
  for b in pairs(m.dirty) do
    local blob = bencode(m.cache[b])
    if blob == '' then gone[#gone + 1] = tostring(b) else flat[#flat + 1] = tostring(b); flat[#flat + 1] = blob end
  end
  flat[#flat + 1] = 'm'
  flat[#flat + 1] = m.n0 .. ' ' .. m.split .. ' ' .. m.n .. ' ' .. m.c[1] .. ' ' .. m.c[2] .. ' ' .. m.c[3]
  chunked('HSET', m.key, flat, 2)
  if #gone > 0 then chunked('HDEL', m.key, gone) end
  for _, kv in ipairs(m.moved) do redis.call('HDEL', kv[1], kv[2]) end
  m.dirty = {}
  m.moved = {}
  m.changed = false
end
