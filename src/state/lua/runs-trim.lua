-- KEYS: index, then run keys. ARGV: keep, then the run id of each run key. Deletes each run still beyond the
-- newest `keep` (or no longer in the index), so a run started meanwhile under a trimmed id is kept.
local keep = tonumber(ARGV[1])
for i = 2, #KEYS do
  local rank = redis.call('ZREVRANK', KEYS[1], ARGV[i])
  if not rank or rank >= keep then
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return 1
