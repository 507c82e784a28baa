/**
 * Prompt tags of an overdue-invoices call: string values only (the service supports nothing else).
 * Keys: customerName, customerNameAr (when the contact has an Arabic name), amountDue ("12,345.00 SAR";
 * several currencies are joined with " + "), invoiceNumbers (oldest first, at most 10 then "and N more"),
 * invoiceCount, oldestDueDate (YYYY-MM-DD) and daysOverdue (of the oldest invoice).
 */

export interface DueInvoice {
  id: string;
  uuid: string;
  number: string;
  dueDate: string;
  outstanding: number;
  currency: string;
  daysOverdue: number;
}

const MAX_LISTED = 10;

/** The currency's own number of decimals (2 for SAR, 3 for KWD, 0 for JPY); 2 when Intl does not know it. */
function decimalsOf(currency: string): number {
  try {
    return new Intl.NumberFormat('en-US', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/** `12,345.00 SAR`. */
export function formatAmount(amount: number, currency: string): string {
  const digits = decimalsOf(currency);
  const text = new Intl.NumberFormat('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(amount);
  return `${text} ${currency}`;
}

/** Totals per currency, largest first, as one string. */
export function amountDue(invoices: readonly DueInvoice[]): string {
  const totals = new Map<string, number>();
  for (const inv of invoices) totals.set(inv.currency, (totals.get(inv.currency) ?? 0) + inv.outstanding);
  return [...totals.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([currency, total]) => formatAmount(Math.round(total * 1e6) / 1e6, currency))
    .join(' + ');
}

/** Oldest due date first, then by number. */
export function byAge(a: DueInvoice, b: DueInvoice): number {
  return a.dueDate.localeCompare(b.dueDate) || a.number.localeCompare(b.number);
}

export function overdueTags(contact: { name: string; nameAr?: string | undefined }, invoices: readonly DueInvoice[]): Record<string, string> {
  const sorted = [...invoices].sort(byAge);
  const oldest = sorted[0];
  const listed = sorted.slice(0, MAX_LISTED).map((i) => i.number);
  const more = sorted.length - listed.length;
  const tags: Record<string, string> = {
    customerName: contact.name,
    amountDue: amountDue(sorted),
    invoiceNumbers: more > 0 ? `${listed.join(', ')} and ${more} more` : listed.join(', '),
    invoiceCount: String(sorted.length),
  };
  if (contact.nameAr !== undefined && contact.nameAr.trim() !== '') tags['customerNameAr'] = contact.nameAr;
  if (oldest) {
    tags['oldestDueDate'] = oldest.dueDate;
    tags['daysOverdue'] = String(oldest.daysOverdue);
  }
  return tags;
}
