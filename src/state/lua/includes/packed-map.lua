-- A packed map (one HASH of buckets, linear hashing; the format: src/state/packed-codec.ts): `pmap(spec)` opens
-- the map whose KEYS index `spec` names (its meta: bucket count, split pointer, record and segment counts), `bucket`
-- reads a bucket once per script, `pflush(m)` splits while the map is over LOAD records a bucket and writes the
-- buckets changed and the meta, once per script. LOAD is defined by the loader from the TypeScript constant
-- (src/state/script.ts), so both sides split at the same load.
--@include "state/lua/includes/packed-bucket"
--@define LOAD
local function pmap(spec)
  -- Only the packed map: the hashes versions before packed records kept are read by packed-pack alone
  -- (includes/packed-old), and a spec naming one here is a caller that still expects them read.
  if not string.match(spec, '^%d+$') then error('bad packed-map spec ' .. spec) end
  local m = { key = KEYS[tonumber(spec)], cache = {}, dirty = {}, changed = false }
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
  m.dirty = {}
  m.changed = false
end
