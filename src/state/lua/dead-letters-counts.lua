-- KEYS: hash, all, contacts, invoices, payments. Returns the hash's length, then each entity index's.
local out = { redis.call('HLEN', KEYS[1]) }
for i = 3, #KEYS do out[#out + 1] = redis.call('ZCARD', KEYS[i]) end
return out
