-- KEYS: run. ARGV: 'set' | 'incr', then field/value pairs. Only on a run that exists (never resurrects one).
if redis.call('HEXISTS', KEYS[1], 'meta') == 0 then return 0 end
for i = 2, #ARGV, 2 do
  if ARGV[1] == 'incr' then redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1
