-- Lua helpers shared by state scripts: `corrupt(key, field)` raises the error reply a state script turns into a
-- StateCorruptError (src/state/script.ts); `chunked(cmd, key, list)` calls a variadic command in slices, so a large
-- page never hits Lua's `unpack` limit.
local function corrupt(key, field)
  error({ err = 'STATE_CORRUPT ' .. key .. ' ' .. field })
end
local function chunked(cmd, key, list, width)
  local n = #list
  local step = 2000 * (width or 1)
  local out = {}
  for i = 1, n, step do
    local slice = {}
    for j = i, math.min(i + step - 1, n) do slice[#slice + 1] = list[j] end
    local r = redis.call(cmd, key, unpack(slice))
    if type(r) == 'table' then for _, v in ipairs(r) do out[#out + 1] = v end end
  end
  return out
end
