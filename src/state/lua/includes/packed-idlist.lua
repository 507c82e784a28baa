-- A list of ids (an invoice's payments, its ledger segment) as the packed format keeps it: each id as its bucket
-- key behind its length. Apart from the codec because only the ledger scripts and the packing of old ledgers
-- read or write one.
--@include "state/lua/includes/packed-codec"
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
