-- ARGV[1]: the map's spec; ARGV[2..]: ids. Per id, its record value as stored, or false.
--@include "state/lua/includes/packed-record"
local m = pmap(ARGV[1])
local out = {}
for i = 2, #ARGV do
  out[i - 1] = rraw(m, ARGV[i]) or false
end
return out
