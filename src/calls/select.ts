/**
 * Campaign selection from synced state, pure: which invoices are overdue, which contacts to call for them
 * and why the others are left out. I/O (the record mirror, the service's reminder flags) is the caller's.
 *
 * Rules (docs/decisions):
 * - An invoice counts when it is AUTHORISED (not DRAFT, PAID, VOIDED or deleted), is in the service (has a
 *   uuid: the service's webhooks are tied back by it), its outstanding amount (the one last pushed, else the
 *   platform's, else the total) is more than 0 and at least `minAmount`, and it is at least `overdueDays`
 *   past its due date, counted in whole UTC days from `asOf`.
 * - A contact is called once for all its counting invoices; it is left out when it is not in the service,
 *   deleted, has reminders disabled in the service, or has no usable phone number.
 * - Two contacts with the same number: the one owed most (oldest debt first) is called; the other is listed as
 *   a duplicate.
 */
import { bulkCallContactSchema } from '../collections/schemas.js';
import type { MirroredContact, MirroredInvoice } from '../state/record-mirror.js';
import { daysBetween } from '../dates.js';
import { normalisePhone } from './phone.js';
import { byAge, overdueTags, type DueInvoice } from './tags.js';
import type { OverdueCriteria, Skip, Target } from './types.js';


export function outstandingOf(inv: MirroredInvoice): number {
  return inv.pushedOutstanding ?? inv.outstandingAmount ?? inv.total;
}

/** The invoice as a due invoice of the campaign, or undefined when it does not count. */
export function overdueInvoice(inv: MirroredInvoice, criteria: OverdueCriteria & { asOf: string }, defaultCurrency: string): DueInvoice | undefined {
  if (inv.deleted || inv.status !== 'AUTHORISED' || inv.uuid === undefined) return undefined;
  const outstanding = outstandingOf(inv);
  if (!(outstanding > 0) || outstanding < criteria.minAmount) return undefined;
  const days = daysBetween(inv.dueDate, criteria.asOf);
  if (days < criteria.overdueDays) return undefined;
  return { id: inv.id, uuid: inv.uuid, number: inv.number, dueDate: inv.dueDate, outstanding, currency: inv.currencyCode ?? defaultCurrency, daysOverdue: days };
}

export interface TargetContext {
  tenant: string;
  campaignId: string;
  region: string;
  /** Contact uuids (lower case) whose reminders are disabled in the service. */
  remindersDisabled: ReadonlySet<string>;
}

export type TargetVerdict = { ok: true; target: Target; invoices: DueInvoice[] } | { ok: false; skip: Skip };

/** The target for one contact owing `invoices`, or why it is left out. */
export function targetFor(contactId: string, contact: MirroredContact | undefined, invoices: DueInvoice[], ctx: TargetContext): TargetVerdict {
  const skip = (reason: Skip['reason'], detail: string): TargetVerdict => ({
    ok: false,
    skip: { who: contactId, ...(contact ? { name: contact.name } : {}), reason, detail },
  });
  if (!contact || contact.uuid === undefined) return skip('not-in-service', 'the contact is not mapped to the service (not synced, or dead-lettered)');
  if (contact.deleted) return skip('deleted', 'the contact is deleted on the platform');
  if (ctx.remindersDisabled.has(contact.uuid.toLowerCase())) return skip('reminders-disabled', 'reminders are disabled for this contact in the service');
  const phone = normalisePhone(contact.phoneNumber, ctx.region);
  if (!phone.ok) return skip(contact.phoneNumber === undefined || contact.phoneNumber.trim() === '' ? 'no-phone' : 'invalid-phone', phone.reason);

  const sorted = [...invoices].sort(byAge);
  const candidate = {
    numberToCall: phone.e164,
    ...(contact.firstName ? { firstName: contact.firstName } : {}),
    ...(contact.lastName ? { lastName: contact.lastName } : {}),
    promptTags: overdueTags(contact, sorted),
    metadata: { tenant: ctx.tenant, campaignId: ctx.campaignId, contactUuid: contact.uuid, contactId, invoiceUuids: sorted.map((i) => i.uuid) },
  };
  const checked = bulkCallContactSchema.safeParse(candidate);
  if (!checked.success) return skip('invalid-entry', checked.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  return { ok: true, target: { number: phone.e164, label: contact.name, contactUuid: contact.uuid, contactId, contact: checked.data }, invoices: sorted };
}

interface Ranked {
  target: Target;
  oldestDue: string;
  owed: number;
}

/**
 * Orders targets (oldest debt first, then most owed, then contact id) and keeps one per number; the others
 * are returned as `duplicate-number` skips naming the contact that keeps the number.
 */
export function rankAndDedupe(found: { target: Target; invoices: DueInvoice[] }[]): { targets: Target[]; skipped: Skip[] } {
  const ranked: Ranked[] = found.map(({ target, invoices }) => ({
    target,
    oldestDue: invoices[0]?.dueDate ?? '9999-12-31',
    owed: invoices.reduce((s, i) => s + i.outstanding, 0),
  }));
  ranked.sort((a, b) => a.oldestDue.localeCompare(b.oldestDue) || b.owed - a.owed || (a.target.contactId ?? a.target.label).localeCompare(b.target.contactId ?? b.target.label));
  const byNumber = new Map<string, Target>();
  const targets: Target[] = [];
  const skipped: Skip[] = [];
  for (const { target } of ranked) {
    const kept = byNumber.get(target.number);
    if (kept) {
      skipped.push({
        who: target.contactId ?? target.label,
        name: target.label,
        reason: 'duplicate-number',
        detail: `same number as ${kept.contactId ?? kept.label} (${kept.label}), which is called instead`,
      });
      continue;
    }
    byNumber.set(target.number, target);
    targets.push(target);
  }
  return { targets, skipped };
}
