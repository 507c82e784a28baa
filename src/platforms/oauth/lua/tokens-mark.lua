-- Marks the chain as one this key cannot decrypt (decision 0163), once: only the first caller gets 1 (and tells the
-- tenant's receiver); a missing chain is not marked. Every write of a new state (commit, connect, seed) clears it.
-- KEYS: oauth. ARGV: the mark (JSON). -> 1 marked now, 0 already marked or no chain.
if redis.call('HEXISTS', KEYS[1], 'v') == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'undecryptable', ARGV[1])
