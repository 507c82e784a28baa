-- KEYS: index, compact list, then run keys. ARGV: detailed, compact lines kept, oldest startedAt kept (0: no age
-- limit), max chars of the compact line's error, then the run id of each run key. Each run still beyond the newest
-- `detailed` (or no longer in the index) is cut to a compact line pushed on the list (newest first) and its hash
-- deleted, so a run started meanwhile under a trimmed id is kept; then the list is trimmed by count and by age.
local detailed = tonumber(ARGV[1])
local lines = tonumber(ARGV[2])
local oldest = tonumber(ARGV[3])
local maxChars = tonumber(ARGV[4])
for i = 3, #KEYS do
  local id = ARGV[i + 2]
  local rank = redis.call('ZREVRANK', KEYS[1], id)
  if not rank or rank >= detailed then
    local flat = redis.call('HGETALL', KEYS[i])
    local h = {}
    for j = 1, #flat, 2 do h[flat[j]] = flat[j + 1] end
    if h.meta and lines > 0 then
      local ok, meta = pcall(cjson.decode, h.meta)
      if ok and type(meta) == 'table' then
        local counts = {}
        local any = false
        for f, v in pairs(h) do
          if string.sub(f, 1, 2) == 'c:' and tonumber(v) ~= 0 then
            counts[string.sub(f, 3)] = tonumber(v)
            any = true
          end
        end
        local err, errOmitted, unlinkedOmitted = cjson.null, 0, 0
        if h.errors then
          local okE, e = pcall(cjson.decode, h.errors)
          if okE and type(e) == 'table' and type(e.items) == 'table' then
            if e.items[1] then err = string.sub(e.items[1], 1, maxChars) end
            errOmitted = math.max(0, #e.items - 1) + (tonumber(e.omitted) or 0)
          end
        end
        if h.unlinked then
          local okU, u = pcall(cjson.decode, h.unlinked)
          if okU and type(u) == 'table' and type(u.items) == 'table' then unlinkedOmitted = #u.items + (tonumber(u.omitted) or 0) end
        end
        local line = {
          meta.runId, meta.mode, meta.startedAt, meta.trigger, meta.requestedAt or cjson.null,
          h.outcome or cjson.null, tonumber(h.finishedAt) or cjson.null, any and counts or 0, err, errOmitted, unlinkedOmitted,
        }
        redis.call('LPUSH', KEYS[2], cjson.encode(line))
      end
    end
    redis.call('DEL', KEYS[i])
    redis.call('ZREM', KEYS[1], id)
  end
end
if lines <= 0 then
  redis.call('DEL', KEYS[2])
  return 1
end
redis.call('LTRIM', KEYS[2], 0, lines - 1)
if oldest > 0 then
  for _ = 1, lines do
    local tail = redis.call('LINDEX', KEYS[2], -1)
    if not tail then break end
    local ok, line = pcall(cjson.decode, tail)
    if ok and type(line) == 'table' and tonumber(line[3]) and tonumber(line[3]) >= oldest then break end
    redis.call('RPOP', KEYS[2])
  end
end
return 1
