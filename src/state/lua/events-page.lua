-- A page of the event log, oldest first (src/state/event-log.ts). KEYS: order, data, status. ARGV: after (a
-- sequence number, 0 from the start), limit, type ('' any), tenants (comma-separated, '' any), min recorded time,
-- budget (entries looked at, at most). Returns {last looked at, 1 when entries follow it, value, delivery, ...}.
local after, limit, typ, minAt, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[5]), tonumber(ARGV[6])
local anyTenant, want = ARGV[4] == '', {}
for t in string.gmatch(ARGV[4], '[^,]+') do want[t] = true end
local out, found, scanned, last = {}, 0, 0, after
while found < limit and scanned < budget do
  local chunk = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. last, '+inf', 'WITHSCORES', 'LIMIT', 0, 100)
  if #chunk == 0 then break end
  for i = 1, #chunk, 2 do
    local id = chunk[i]
    last = tonumber(chunk[i + 1])
    scanned = scanned + 1
    local v = redis.call('HGET', KEYS[2], id)
    if v then
      local at, tenant, t = string.match(v, '^%d+|(%d+)|([^|]*)|([^|]*)|')
      if tonumber(at) >= minAt and (anyTenant or want[tenant]) and (typ == '' or typ == t) then
        out[#out + 1] = v
        out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
        found = found + 1
      end
    end
    if found >= limit or scanned >= budget then break end
  end
end
local more = #redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. last, '+inf', 'LIMIT', 0, 1) > 0
local reply = {tostring(last), more and 1 or 0}
for _, x in ipairs(out) do reply[#reply + 1] = x end
return reply
