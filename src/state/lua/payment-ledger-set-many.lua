-- ARGV[3..]: (paymentId, invoiceId, amount, deleted) quads (KEYS, ARGV[1..2]: includes/payment-ledger.lua).
--@include "state/lua/includes/payment-ledger"
for i = 3, #ARGV, 4 do
  local pid, inv, amount, deleted = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local hp = redit(P, pid)
  if hp.t[3] then
    local _, _, oldInv = parse(pid, hp.t[3])
    if oldInv ~= inv then
      local ho = redit(I, oldInv)
      local kept = {}
      for _, p in ipairs(ldec(I.key, oldInv, ho.t[3] or '')) do if p ~= pid then kept[#kept + 1] = p end end
      ho.t[3] = #kept > 0 and lenc(kept) or false
      rsave(I, ho)
    end
  end
  hp.t[3] = deleted .. '|' .. amount .. '|' .. pk(inv)
  rsave(P, hp)
  local hi = redit(I, inv)
  local l = ldec(I.key, inv, hi.t[3] or '')
  local found = false
  for _, p in ipairs(l) do if p == pid then found = true break end end
  if not found then
    l[#l + 1] = pid
    hi.t[3] = lenc(l)
    rsave(I, hi)
  end
end
pflush(P)
pflush(I)
return (#ARGV - 2) / 4
