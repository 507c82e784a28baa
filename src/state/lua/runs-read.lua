-- KEYS: run keys. Returns each run's [field, value, ...] (empty for a run trimmed since its id was read).
local out = {}
for i, k in ipairs(KEYS) do out[i] = redis.call('HGETALL', k) end
return out
