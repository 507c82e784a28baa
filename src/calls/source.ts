/**
 * Reads an overdue selection out of the record mirror (one HSCAN over the tenant's invoices, then the owing
 * contacts in batches) and runs the pure rules of select.ts over it.
 */
import type { RecordMirror } from '../state/record-mirror.js';
import { todayUtc } from '../dates.js';
import { overdueInvoice, rankAndDedupe, targetFor, type TargetContext } from './select.js';
import type { DueInvoice } from './tags.js';
import type { OverdueCriteria, Skip, Target } from './types.js';

export interface Selection {
  targets: Target[];
  skipped: Skip[];
  /** Invoices that count, and contacts owing them. */
  invoices: number;
  contacts: number;
}

const CONTACT_BATCH = 500;

export async function selectOverdue(
  mirror: Pick<RecordMirror, 'scan' | 'getMany'>,
  ctx: TargetContext & { criteria: OverdueCriteria; currency: string },
): Promise<Selection> {
  const criteria = { ...ctx.criteria, asOf: ctx.criteria.asOf ?? todayUtc() };
  const owing = new Map<string, DueInvoice[]>();
  let invoices = 0;
  for await (const batch of mirror.scan(ctx.tenant, 'invoices')) {
    for (const inv of batch) {
      const due = overdueInvoice(inv, criteria, ctx.currency);
      if (!due) continue;
      invoices += 1;
      const list = owing.get(inv.contactId);
      if (list) list.push(due);
      else owing.set(inv.contactId, [due]);
    }
  }
  const ids = [...owing.keys()].sort();
  const found: { target: Target; invoices: DueInvoice[] }[] = [];
  const skipped: Skip[] = [];
  for (let i = 0; i < ids.length; i += CONTACT_BATCH) {
    const chunk = ids.slice(i, i + CONTACT_BATCH);
    const contacts = await mirror.getMany(ctx.tenant, 'contacts', chunk);
    for (const id of chunk) {
      const verdict = targetFor(id, contacts.get(id), owing.get(id) ?? [], ctx);
      if (verdict.ok) found.push({ target: verdict.target, invoices: verdict.invoices });
      else skipped.push(verdict.skip);
    }
  }
  const ranked = rankAndDedupe(found);
  return { targets: ranked.targets, skipped: [...skipped, ...ranked.skipped], invoices, contacts: ids.length };
}
