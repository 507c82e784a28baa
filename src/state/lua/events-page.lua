-- A page of the event log, oldest first (src/state/event-log.ts). KEYS: order, data, status. ARGV: after (a
-- sequence number, 0 from the start), limit, type ('' any), tenants (comma-separated, '' any), min recorded time,
-- budget (entries looked at, at most), order ('desc': newest first, `after` then the sequence number the page starts
-- before, 0 from the newest). Looks for one match more than the limit, so `more` says whether a match
-- follows (or, the budget spent, whether entries are left to look at). Returns {last, more (1/0), value, delivery,
-- ...}: `last` is the sequence number the next page starts after.
local after, limit, typ, minAt, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[5]), tonumber(ARGV[6])
local desc = ARGV[7] == 'desc'
local anyTenant, want = ARGV[4] == '', {}
for t in string.gmatch(ARGV[4], '[^,]+') do want[t] = true end
local out, seqs, scanned, last, spent = {}, {}, 0, after, false
while #seqs <= limit do
  if scanned >= budget then
    spent = true
    break
  end
  local chunk
  if desc then
    chunk = redis.call('ZREVRANGEBYSCORE', KEYS[1], last == 0 and '+inf' or '(' .. last, '-inf', 'WITHSCORES', 'LIMIT', 0, 100)
  else
    chunk = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. last, '+inf', 'WITHSCORES', 'LIMIT', 0, 100)
  end
  if #chunk == 0 then break end
  for i = 1, #chunk, 2 do
    local id = chunk[i]
    last = tonumber(chunk[i + 1])
    scanned = scanned + 1
    local v = redis.call('HGET', KEYS[2], id)
    if v then
      local at, tenant, t = string.match(v, '^%d+|(%d+)|([^|]*)|([^|]*)|')
      if tonumber(at) >= minAt and (anyTenant or want[tenant]) and (typ == '' or typ == t) then
        seqs[#seqs + 1] = last
        if #seqs <= limit then
          out[#out + 1] = v
          out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
        end
      end
    end
    if #seqs > limit or scanned >= budget then break end
  end
end
local more
if #seqs > limit then
  last, more = seqs[limit], 1
elseif spent or scanned >= budget then
  if desc then
    more = #redis.call('ZREVRANGEBYSCORE', KEYS[1], last == 0 and '+inf' or '(' .. last, '-inf', 'LIMIT', 0, 1) > 0 and 1 or 0
  else
    more = #redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. last, '+inf', 'LIMIT', 0, 1) > 0 and 1 or 0
  end
else
  more = 0
end
local reply = {tostring(last), more}
for _, x in ipairs(out) do reply[#reply + 1] = x end
return reply
