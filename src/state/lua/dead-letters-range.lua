-- KEYS: hash, zset. ARGV: 'rev' or 'fwd', min, max, offset, limit. Returns [member, value, ...].
local members
if ARGV[1] == 'rev' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[2], ARGV[3], ARGV[2], 'LIMIT', ARGV[4], ARGV[5])
else
  members = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[2], ARGV[3], 'LIMIT', ARGV[4], ARGV[5])
end
local out = {}
for _, m in ipairs(members) do
  local v = redis.call('HGET', KEYS[1], string.sub(m, 17))
  out[#out + 1] = m
  out[#out + 1] = v or ''
end
return out
