-- Takes a lease and a slot of every limit in one step, on Redis's clock (src/platforms/oauth/rate-limiter.ts).
-- KEYS: inflight, minute log, day counter, app counter, block:minute, block:day, block:concurrent, block:app.
-- ARGV: lease id, lease ms, concurrent, per minute, per day, app per minute.
-- Returns {1, 0, ''} when taken, or {0, wait ms, scope}.
--@include "redis/lua/includes/now"
local scopes = {'minute', 'day', 'concurrent', 'app'}
for i = 5, 8 do
  local ttl = redis.call('PTTL', KEYS[i])
  if ttl > 0 then return {0, ttl, scopes[i - 4]} end
end
local perDay = tonumber(ARGV[5])
local appLimit = tonumber(ARGV[6])
local day = tonumber(redis.call('GET', KEYS[3]) or '0')
if perDay > 0 and day >= perDay then
  local ttl = redis.call('PTTL', KEYS[3])
  if ttl < 0 then ttl = 60000 end
  return {0, ttl, 'day'}
end
local window = math.floor(now / 60000)
local appWindow = tonumber(redis.call('HGET', KEYS[4], 'w') or '-1')
local appCount = 0
if appWindow == window then appCount = tonumber(redis.call('HGET', KEYS[4], 'n') or '0') end
if appLimit > 0 and appCount >= appLimit then return {0, (window + 1) * 60000 - now, 'app'} end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - 60000)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  local wait = tonumber(oldest[2]) + 60000 - now
  if wait < 1 then wait = 1 end
  return {0, wait, 'minute'}
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, tonumber(first[2]) - now, 'concurrent'}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('PEXPIRE', KEYS[2], 61000)
if perDay > 0 and redis.call('INCR', KEYS[3]) == 1 then redis.call('PEXPIRE', KEYS[3], 86400000) end
if appLimit > 0 then
  if appWindow ~= window then
    redis.call('HSET', KEYS[4], 'w', window, 'n', 1)
  else
    redis.call('HINCRBY', KEYS[4], 'n', 1)
  end
  redis.call('PEXPIRE', KEYS[4], 120000)
end
return {1, 0, ''}
