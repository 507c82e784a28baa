-- KEYS: the stored tenants' index (ZSET id -> sequence of its last change), their change counter, the removed ids
-- (ZSET id -> sequence of the removal), the floor (the last sequence trimmed from the removed ids) and when each
-- removed id was removed (HASH id -> epoch ms: its state is purged a retention period later).
-- ARGV: tenant id, 'put' or 'del', how many removed ids to keep, now (epoch ms).
-- Takes the next sequence and files the change under it, in one step: every change a reader sees at sequence s has
-- every change before s beside it (a reader that read up to s misses none). -> the sequence.
local seq = redis.call('INCR', KEYS[2])
if ARGV[2] == 'put' then
  redis.call('ZADD', KEYS[1], seq, ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  redis.call('HDEL', KEYS[5], ARGV[1])
else
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[3], seq, ARGV[1])
  redis.call('HSET', KEYS[5], ARGV[1], ARGV[4])
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[3])
  if over > 0 then
    local gone = redis.call('ZRANGE', KEYS[3], over - 1, over - 1, 'WITHSCORES')
    redis.call('ZREMRANGEBYRANK', KEYS[3], 0, over - 1)
    redis.call('SET', KEYS[4], gone[2])
  end
end
return seq
