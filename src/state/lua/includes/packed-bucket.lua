-- One bucket of a packed map, as a blob of (key, value) entries: reading a record in it, and re-encoding it after
-- edits without decoding the rest. No Redis call: the map (packed-map) reads and writes buckets.
--@include "state/lua/includes/packed-codec"
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
