-- KEYS: the numbers' keys. ARGV: campaign, request, reserved value, hold ms. Returns '' (taken) or the holder's value per key.
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if not v then
    redis.call('SET', k, ARGV[3], 'PX', ARGV[4])
    out[i] = ''
  else
    local ok, d = pcall(cjson.decode, v)
    if ok and type(d) == 'table' and d.campaign == ARGV[1] and d.request == ARGV[2] and d.state == 'reserved' then
      out[i] = ''
    else
      out[i] = v
    end
  end
end
return out
