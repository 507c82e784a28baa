-- Drops the hash side of the id maps of the packed records in buckets [ARGV[2], ARGV[2] + ARGV[3]) (ARGV[1]: the
-- map's spec). -> { next bucket (-1: done), hashes dropped }
--@include "state/lua/includes/packed-record"
--@include "state/lua/includes/packed-idmap"
local m = pmap(ARGV[1])
local b, width = tonumber(ARGV[2]), tonumber(ARGV[3])
local total = m.n0 + m.split
local last = math.min(b + width, total)
local n = 0
while b < last do
  local bk = bucket(m, b)
  local ks = bentries(bk)
  for _, k in ipairs(ks) do
    if bget(bk, k) then
      local id = unpk(k)
      local h = redit(m, id)
      local f, u, hh = idparts(m.key, id, h.t[1])
      if hh ~= '' then
        h.t[1] = idseg(f % 2, u, '')
        rsave(m, h)
        n = n + 1
      end
    end
  end
  b = b + 1
end
pflush(m)
return { b < total and b or -1, n }
