-- open the gate if we closed it. KEYS: gate. ARGV: owner, channel. -> 1 when opened.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('PUBLISH', ARGV[2], 'opened')
  return 1
end
return 0
