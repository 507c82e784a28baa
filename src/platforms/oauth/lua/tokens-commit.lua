-- Writes a new state only while ARGV[1] holds the lock KEYS[2] (an empty ARGV[1]: lock or not, see `commitAt`) and
-- the version is still ARGV[2]. KEYS: oauth, lock. ARGV: owner, version, state. -> the new version, -1 lock lost,
-- -2 version moved. A state written is one this key wrote: an undecryptable mark goes.
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return -1 end
local v = redis.call('HGET', KEYS[1], 'v')
if v ~= ARGV[2] then return -2 end
local next = tonumber(v) + 1
redis.call('HSET', KEYS[1], 'v', tostring(next), 'state', ARGV[3])
redis.call('HDEL', KEYS[1], 'undecryptable')
return next
