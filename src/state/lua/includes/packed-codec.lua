-- The byte codec of packed records, the Lua side of src/state/packed-codec.ts (which holds the format): varints,
-- the id hash that addresses buckets, an id as its bucket key, and a record value's three segments. Pure: no
-- Redis call, so every packed script can include it.
--@include "state/lua/includes/helpers"
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
