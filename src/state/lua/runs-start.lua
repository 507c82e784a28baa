-- KEYS: index, run. ARGV: runId, startedAt, meta, detailed. Returns the ids beyond the newest `detailed`, for
-- runs-trim (which cuts them to compact lines).
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'meta', ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local excess = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if excess <= 0 then return {} end
return redis.call('ZRANGE', KEYS[1], 0, excess - 1)
