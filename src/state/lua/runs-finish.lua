-- KEYS: run, last success. ARGV: the last-success mark to set ('' for none: a failed run), then field/value pairs.
-- Only on a run that exists, like runs-patch; the mark is written with the run's end, so the two never disagree.
if redis.call('HEXISTS', KEYS[1], 'meta') == 0 then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
if ARGV[1] ~= '' then redis.call('SET', KEYS[2], ARGV[1]) end
return 1
