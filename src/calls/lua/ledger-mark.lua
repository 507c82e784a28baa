-- KEYS: the numbers' keys. ARGV: campaign, request ('' = any), state ('' = delete), ttl ('' = keep, '0' = delete), now, from-state ('' = any).
local n = 0
for _, k in ipairs(KEYS) do
  local v = redis.call('GET', k)
  if v then
    local ok, d = pcall(cjson.decode, v)
    if ok and type(d) == 'table' and d.campaign == ARGV[1] and (ARGV[2] == '' or d.request == ARGV[2]) and (ARGV[6] == '' or d.state == ARGV[6]) then
      if ARGV[3] == '' or ARGV[4] == '0' then
        redis.call('DEL', k)
      else
        d.state = ARGV[3]
        d.at = ARGV[5]
        if ARGV[4] == '' then
          redis.call('SET', k, cjson.encode(d), 'KEEPTTL')
        else
          redis.call('SET', k, cjson.encode(d), 'PX', ARGV[4])
        end
      end
      n = n + 1
    end
  end
end
return n
