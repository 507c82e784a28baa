-- KEYS: hash, all, contacts, invoices, payments. ARGV: (key, entity index, padded at, first run, json) groups; the json
-- is the body without `firstRunId`, which is written first: the run that made the entry, kept from an existing entry
-- (its `firstRunId`, else, written before there was one, its `runId`), else this group's. Returns how many entries
-- were new.
--@include "state/lua/includes/dead-letters-head"
local made = 0
for i = 1, #ARGV, 5 do
  local k, e, at, firstRun, json = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2], ARGV[i + 3], ARGV[i + 4]
  local attempts, first = 1, at
  local old = redis.call('HGET', KEYS[1], k)
  if old then
    local a, f, t = head(k, old)
    attempts, first = a + 1, f
    local ok, body = pcall(cjson.decode, string.sub(old, #(a .. '|' .. f .. '|' .. t .. '|') + 1))
    if ok and type(body) == 'table' then
      local kept = body['firstRunId'] or body['runId']
      if type(kept) == 'string' then firstRun = kept end
    end
    unindex(k, t)
  else
    made = made + 1
  end
  redis.call('HSET', KEYS[1], k, attempts .. '|' .. first .. '|' .. at .. '|{"firstRunId":' .. cjson.encode(firstRun) .. ',' .. string.sub(json, 2))
  redis.call('ZADD', KEYS[2], 0, at .. '|' .. k)
  redis.call('ZADD', KEYS[2 + e], 0, at .. '|' .. k)
end
return made
