-- The ledger is the third segment of packed records: a payment's `deleted|amount|invoiceId`, an invoice's payment
-- ids. KEYS: the payments' packed map, then the invoices'. ARGV[1], ARGV[2]: their specs. Opens them as P and I;
-- `parse(id, v)` reads a payment's segment.
--@include "state/lua/includes/packed-record"
--@include "state/lua/includes/packed-idlist"
local P = pmap(ARGV[1])
local I = pmap(ARGV[2])
local function parse(id, v)
  local d, a, inv = string.match(v, '^([01])|([^|]+)|(.+)$')
  if not d then corrupt(P.key, id) end
  return d, a, unpk(inv)
end
