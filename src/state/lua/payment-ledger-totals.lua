-- ARGV[3..]: invoice ids. Per invoice: false (no payments known) or the live amounts; an empty list when no invoice
-- of the tenant has a payment (the map's count of ledger segments is 0: a first sync's invoices, before its
-- payments, cost no walk of their buckets).
--@include "state/lua/includes/payment-ledger"
if I.c[3] == 0 then return {} end
local out = {}
for i = 3, #ARGV do
  local inv = ARGV[i]
  local t = rget(I, inv)
  if t and t[3] then
    local amounts = {}
    for _, pid in ipairs(ldec(I.key, inv, t[3])) do
      local p = rget(P, pid)
      if p and p[3] then
        local d, a = parse(pid, p[3])
        if d == '0' then amounts[#amounts + 1] = a end
      end
    end
    out[i - 2] = amounts
  else
    out[i - 2] = false
  end
end
return out
