-- release. KEYS: leases, gate, limitWait. ARGV: channel, leaseId... Publishes 'released' only when someone listens
-- for it (a rotation draining, or a waiter under the in-flight limit).
local removed = redis.call('ZREM', KEYS[1], unpack(ARGV, 2))
if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('PUBLISH', ARGV[1], 'released')
end
return removed
