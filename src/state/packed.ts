/**
 * Packed records (README decision "lean state values"): everything the state keeps of one record (its id-map
 * entry, its record-mirror cells, its payment-ledger entry) is ONE value, and the values of a (tenant, entity) live
 * in one Redis HASH, `<base>:rec:{<tenant>}:<entity>`, packed in buckets: a field is a bucket number, its value
 * the bucket's records (`varint(len) id varint(len) value`, repeated: lengths, never delimiters, so any byte may
 * be data; a canonical lower-case GUID id as 0xFF and its 16 bytes). A meta field `m` holds `n0 split records ids mirror ledger` (linear hashing: a record's bucket is
 * djb2(id) mod n0, or mod 2*n0 below the split pointer; when records exceed LOAD per bucket, the split pointer's
 * bucket is split in two, one bucket at a time, so growth is incremental and memory linear). Redis's per-field
 * cost (about 60 bytes) is paid once per bucket, not three times per record.
 *
 * A record value is up to three segments, each `varint(len + 1) bytes` (0: absent):
 *   1. id map: `flags varint(uuidLen) uuid hash`; flags bit 1: the uuid is its 16 raw bytes, bit 2: the hash is
 *      its 9 raw bytes; otherwise the text as given (or as an older version wrote it).
 *   2. mirror: `J` + the JSON an older version wrote, or `C` + cells, each `varint(code) bytes`: 0 null, else
 *      code - 1 = 8 * bytes + kind (text, a number as text, an integer or an amount's hundredths as a varint,
 *      Arabic text one byte a character: src/state/record-mirror.ts). Cell 0 (the uuid) is text: `B` + 16 bytes,
 *      `T` + text, or `=`: the id map's uuid (most records: the uuid is stored once).
 *   3. ledger: a payment's `deleted|amount|invoiceId`; an invoice's payment ids, each `varint(len) id` (ids as
 *      bucket keys: a GUID in 17 bytes).
 *
 * Upgrade: the keys versions before this one wrote (`ids`, `cache`, `ledger` hashes) are read when an id is not
 * in the packed map, and a write of such an id moves all of its old entries into its packed value and deletes
 * them from the old hashes in the same script: an entry is always in exactly one place.
 */
import type { Redis } from 'ioredis';
import { ENTITIES, type Entity } from '../glossary.js';
import { stateKey } from './keys.js';
import { LUA_HELPERS, stateScript } from './script.js';
import { StateCorruptError } from './stored.js';

/**
 * Records per bucket (average) before a bucket splits: buckets of a few hundred bytes (Lua walks a bucket to the
 * record it wants, and writes all of it again when one record changes). 8, not the 24 of before: Redis's CPU per
 * synced record about 25-30% lower for about 2.7 bytes a record more (one bucket field per 8 records instead of
 * 24). A map written with a larger load splits to this one as it is written (at most 64 splits a script call).
 */
export const LOAD = 8;

/**
 * The Lua of packed maps (after LUA_HELPERS). `pmap(spec)` opens one map: `spec` names its KEYS, e.g.
 * `1,2i,3m,4v` (KEYS[1] the packed map; KEYS[2] the old id map, 3 the old mirror, 4 the old invoice ledger; `p`
 * the old payment ledger). `redit(m, id)` gives an edit handle whose `t` holds the record's three segments
 * (false: absent), moving an old entry in; `rsave(m, h)` stores it; `pflush(m)` splits and writes the buckets
 * changed, once per script. `rget(m, id)` reads without moving (nil: unknown).
 */
export const LUA_PACKED = `
local LOAD = ${LOAD}
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
  return '\\255' .. string.gsub(hex, '..', function(x) return string.char(tonumber(x, 16)) end)
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
    if t[k] then parts[#parts + 1] = vput(#t[k] + 1) .. t[k] else parts[#parts + 1] = '\\0' end
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
`;

/** The Lua every packed script starts with. */
export const PACKED_PRELUDE = `${LUA_HELPERS}${LUA_PACKED}`;

/**
 * ARGV[1]: the map's spec; ARGV[2..]: ids. Per id, its record value (as `rget` reads it, old hashes included:
 * segments re-packed) or false.
 */
const GET = stateScript(`${PACKED_PRELUDE}
local m = pmap(ARGV[1])
local out = {}
for i = 2, #ARGV do
  out[i - 1] = rraw(m, ARGV[i]) or false
end
return out
`);

/**
 * ARGV: spec, segment (1-3), first residue, max records, the walk's n0 (0: the map's n0 now, at the first call).
 * A walk goes residue by residue of bucket numbers mod its n0: buckets split into b + n0 and n0 only doubles, so
 * a record's bucket keeps its residue, and each call reads all buckets of the residues it covers at once: a record
 * is seen exactly once even while buckets split. Reply: { next residue (-1: done), the walk's n0, id, value, ... }
 * of the records holding the segment.
 */
const SCAN = stateScript(`${PACKED_PRELUDE}
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
`);

/** The old hashes an entity's records were kept in before packed maps, with the Lua kind letter of each. */
function oldKeys(prefix: string, tenant: string, entity: Entity): [string, string][] {
  const out: [string, string][] = [[stateKey(prefix, 'ids', tenant, entity), 'i']];
  if (entity !== 'payments') out.push([stateKey(prefix, 'mirror', tenant, entity), 'm']);
  if (entity === 'payments') out.push([stateKey(prefix, 'paymentLedger', tenant, 'pay'), 'p']);
  if (entity === 'invoices') out.push([stateKey(prefix, 'paymentLedger', tenant, 'inv'), 'v']);
  return out;
}

/** One packed map's KEYS (its own, then the old hashes) and its spec, numbered from KEYS[first]. */
export interface PackedMapKeys {
  keys: string[];
  spec: string;
}

export function packedKey(prefix: string, tenant: string, entity: Entity): string {
  return stateKey(prefix, 'rec', tenant, entity);
}

export function packedMap(prefix: string, tenant: string, entity: Entity, first = 1): PackedMapKeys {
  const olds = oldKeys(prefix, tenant, entity);
  return {
    keys: [packedKey(prefix, tenant, entity), ...olds.map(([k]) => k)],
    spec: [String(first), ...olds.map(([, kind], i) => `${first + 1 + i}${kind}`)].join(','),
  };
}

/** The old hash of one segment of an entity (`ids` for 1, `cache` for 2, a ledger for 3), if it has one. */
export function oldKeyOf(prefix: string, tenant: string, entity: Entity, segment: 1 | 2 | 3): string | undefined {
  const kind = { 1: 'i', 2: 'm', 3: entity === 'payments' ? 'p' : 'v' }[segment];
  return oldKeys(prefix, tenant, entity).find(([, k]) => k === kind)?.[0];
}

// ---- JS side: varints and segments ----

export function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n >= 128) {
    bytes.push(128 + (n % 128));
    n = Math.floor(n / 128);
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** An id as packed records keep it in a bucket or a ledger segment (0xFF + 16 bytes: a GUID), as text. */
export function idOf(bytes: Buffer): string {
  if (bytes.length === 17 && bytes[0] === 0xff) {
    const hex = bytes.subarray(1).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  }
  return bytes.toString('utf8');
}

/** Reads a varint at `at`: [value, next offset], or undefined past the end. */
export function readVarint(buf: Buffer, at: number): [number, number] | undefined {
  let n = 0;
  let m = 1;
  for (let i = at; i < buf.length; i += 1) {
    const b = buf[i] as number;
    if (b < 128) return [n + b * m, i + 1];
    n += (b - 128) * m;
    m *= 128;
  }
  return undefined;
}

export type Segments = [Buffer | undefined, Buffer | undefined, Buffer | undefined];

/** A record value's three segments (throws StateCorruptError naming key and id). */
export function segmentsOf(value: Buffer, key: string, id: string): Segments {
  const out: Segments = [undefined, undefined, undefined];
  let i = 0;
  for (let k = 0; k < 3 && i < value.length; k += 1) {
    const r = readVarint(value, i);
    if (!r || r[1] + r[0] - 1 > value.length) throw new StateCorruptError(key, id, 'bad packed record');
    const [l, next] = r;
    if (l > 0) out[k] = value.subarray(next, next + l - 1);
    i = next + Math.max(l - 1, 0);
  }
  if (i < value.length) throw new StateCorruptError(key, id, 'bad packed record');
  return out;
}

function asBuffer(v: unknown): Buffer | undefined {
  return Buffer.isBuffer(v) ? v : typeof v === 'string' ? Buffer.from(v) : undefined;
}

/** Record values of `ids` (one script: old hashes read where an id is not packed yet). Unknown ids are absent. */
export async function getRecords(redis: Redis, prefix: string, tenant: string, entity: Entity, ids: readonly string[]): Promise<Map<string, Segments>> {
  const out = new Map<string, Segments>();
  if (ids.length === 0) return out;
  const map = packedMap(prefix, tenant, entity);
  const reply = await GET.runBuffer(redis, map.keys, [map.spec, ...ids]);
  if (!Array.isArray(reply)) throw new StateCorruptError(map.keys[0] ?? '', undefined, 'packed read did not return a list');
  ids.forEach((id, i) => {
    const v = asBuffer(reply[i]);
    if (v) out.set(id, segmentsOf(v, map.keys[0] ?? '', id));
  });
  return out;
}

/**
 * Every packed record holding `segment`, in batches of buckets (flat memory). A record there from the start to
 * the end of the walk comes exactly once, splits or not (SCAN above). Old hashes are walked by the stores
 * themselves, before this (an entry moves from an old hash into the packed map, never back).
 */
export async function* scanRecords(
  redis: Redis,
  prefix: string,
  tenant: string,
  entity: Entity,
  segment: 1 | 2 | 3,
  count = 500,
): AsyncGenerator<[string, Segments][]> {
  const map = packedMap(prefix, tenant, entity);
  const key = map.keys[0] ?? '';
  let residue = 0;
  let n0 = 0;
  while (residue >= 0) {
    const reply = await SCAN.runBuffer(redis, map.keys, [map.spec, segment, residue, count, n0]);
    if (!Array.isArray(reply)) throw new StateCorruptError(key, undefined, 'packed scan did not return a list');
    residue = Number(String(reply[0]));
    n0 = Number(String(reply[1]));
    const batch: [string, Segments][] = [];
    for (let i = 2; i + 1 < reply.length; i += 2) {
      const id = String(reply[i]);
      const v = asBuffer(reply[i + 1]);
      if (v) batch.push([id, segmentsOf(v, key, id)]);
    }
    if (batch.length > 0) yield batch;
  }
}

/** ARGV: the map's spec, then ids: each id's entries in the old hashes move into its packed value. */
const PACK = stateScript(`${PACKED_PRELUDE}
local m = pmap(ARGV[1])
local n = 0
for i = 2, #ARGV do
  local id = ARGV[i]
  local h = redit(m, id)
  if h.had then
    -- Already packed (written since): the packed value is the newer; an old entry left behind only goes.
    local _, found = legacy(m, id)
    for _, kv in ipairs(found or {}) do m.moved[#m.moved + 1] = kv end
    if found then m.changed = true end
  elseif h.found then
    rsave(m, h)
    n = n + 1
  end
end
pflush(m)
return n
`);

/**
 * Moves a tenant's entries of the hashes versions before packed records kept (`ids`, `cache`, `ledger`) into its
 * packed records, in batches of `batch` ids (HSCAN of each old hash, one script per batch: each id's entries
 * move together and leave the old hashes in the same script). Idempotent and resumable: what moved is gone from
 * the old hashes. With `apply` false, counts the entries instead. Returns the old hashes' entries it found.
 */
export async function packOldEntries(redis: Redis, prefix: string, tenant: string, apply: boolean, batch = 500): Promise<number> {
  let n = 0;
  for (const entity of ENTITIES) {
    const map = packedMap(prefix, tenant, entity);
    for (const [old] of oldKeys(prefix, tenant, entity)) {
      if (!apply) {
        n += await redis.hlen(old);
        continue;
      }
      // Entries leave as they move: scan until the hash is gone (a write of the worker may move some meanwhile).
      for (let pass = 0; pass < 100 && (await redis.exists(old)) === 1; pass += 1) {
        let cursor = '0';
        do {
          const [next, flat] = await redis.hscan(old, cursor, 'COUNT', batch);
          cursor = next;
          const ids = flat.filter((_, i) => i % 2 === 0);
          if (ids.length === 0) continue;
          n += ids.length;
          await PACK.run(redis, map.keys, [map.spec, ...ids]);
        } while (cursor !== '0');
      }
    }
  }
  return n;
}

/** KEYS: a packed map, an old hash. ARGV: a segment. Records holding it: packed, and in the old hash. */
const COUNT = stateScript(`${PACKED_PRELUDE}
local meta = redis.call('HGET', KEYS[1], 'm')
local n = 0
if meta then
  local c = { string.match(meta, '^%d+ %d+ %d+ (%d+) (%d+) (%d+)$') }
  if #c ~= 3 then corrupt(KEYS[1], 'm') end
  n = tonumber(c[tonumber(ARGV[1])])
end
return n + redis.call('HLEN', KEYS[2])
`);

/** Records holding `segment` (one script): the packed map's count and the old hash's. */
export async function countRecords(redis: Redis, prefix: string, tenant: string, entity: Entity, segment: 1 | 2 | 3, oldKey: string): Promise<number> {
  return Number(await COUNT.run(redis, [packedKey(prefix, tenant, entity), oldKey], [segment]));
}

/** The meta counts of a packed map: records, and records holding each segment. */
export async function packedCounts(redis: Redis, prefix: string, tenant: string, entity: Entity): Promise<{ records: number; segments: [number, number, number] }> {
  const key = packedKey(prefix, tenant, entity);
  const meta = await redis.hget(key, 'm');
  if (meta === null) return { records: 0, segments: [0, 0, 0] };
  const m = /^\d+ \d+ (\d+) (\d+) (\d+) (\d+)$/.exec(meta);
  if (!m) throw new StateCorruptError(key, 'm', 'bad packed-map meta');
  return { records: Number(m[1]), segments: [Number(m[2]), Number(m[3]), Number(m[4])] };
}
