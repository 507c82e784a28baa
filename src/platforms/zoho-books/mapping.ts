/**
 * Zoho Books contacts, invoices and customer payments -> canonical records (record-format.md). Each item is checked
 * on its own: a malformed one becomes a bad record, never a failed page. Decisions (docs/decisions/0191):
 * - Contacts: `contact_type` vendor is `customer: false` (pushed only once a receivable invoice needs it); `status`
 *   inactive is a deletion (reminders off; made active again, collected again). The name is `contact_name` as written
 *   (Arabic names included, as for the other platforms); `language_code` has no canonical field. The phone is the
 *   mobile before the work phone. Contact persons (secondary contacts) come only from a contact's detail: `persons` is
 *   absent (not sent, not cleared) when the detail was not read. Addresses are only in the detail and are not synced.
 * - Invoices: `draft` (and the approval states before sending) is DRAFT, never pushed; `void` is VOIDED (stop
 *   collecting); `sent`, `viewed`, `overdue`, `unpaid`, `partially_paid` are collected with `balance` outstanding;
 *   `paid` is PAID with 0 outstanding. Any other status is a bad record (a new one must be decided, not guessed).
 * - Payments: one record per invoice a payment is applied to (its detail's `invoices`), id `<payment_id>:<invoice_id>`.
 */
import type { Entity } from '../../glossary.js';
import { checkRecord, type RecordOf } from '../records.js';
import { zohoDate, zohoMs, zohoTimestamp } from './dates.js';
import { zohoContactSchema, zohoInvoiceSchema, zohoPaymentSchema, type ZohoContact, type ZohoInvoice, type ZohoPayment } from './schemas.js';

/** Where an item sits in (last_modified_time, id) order, when both are readable (for paging, even for bad items). */
export interface ItemPosition {
  ms: number;
  id: string;
}

export type ZohoOutcome<E extends Entity> =
  | { kind: 'records'; records: RecordOf[E][]; position: ItemPosition; item: E extends 'contacts' ? ZohoContact : E extends 'invoices' ? ZohoInvoice : ZohoPayment }
  | { kind: 'bad'; reason: string; platformId?: string; position?: ItemPosition };

const COLLECTED = new Set(['sent', 'viewed', 'overdue', 'unpaid', 'partially_paid']);
const NOT_YET_SENT = new Set(['draft', 'pending_approval', 'approved']);

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

function positionOf(id: string | undefined, stamp: string | undefined): ItemPosition | undefined {
  const ms = zohoMs(stamp);
  return id === undefined || ms === undefined ? undefined : { ms, id };
}

export function contactRecordFrom(c: ZohoContact, organizationId: string): Record<string, unknown> {
  const persons = (c.contact_persons ?? [])
    .filter((p) => p.is_primary_contact !== true)
    .map((p) => {
      const name = [p.first_name, p.last_name].filter((v) => v !== undefined).join(' ');
      return defined({ id: p.contact_person_id, name: name === '' ? undefined : name, firstName: p.first_name, lastName: p.last_name, email: p.email, phoneNumber: p.mobile ?? p.phone });
    })
    .filter((p) => Object.keys(p).some((k) => k !== 'id'));
  return defined({
    id: c.contact_id,
    companyId: organizationId,
    updatedAt: zohoTimestamp(c.last_modified_time) ?? c.last_modified_time,
    deleted: c.status?.toLowerCase() === 'inactive',
    name: c.contact_name ?? c.company_name,
    firstName: c.first_name,
    lastName: c.last_name,
    email: c.email,
    phoneNumber: c.mobile ?? c.phone,
    ...(c.contact_persons !== undefined && c.contact_persons !== null ? { persons } : {}),
    customer: c.contact_type === undefined ? undefined : c.contact_type.toLowerCase() !== 'vendor',
  });
}

export function invoiceRecordFrom(inv: ZohoInvoice): Record<string, unknown> | string {
  const status = inv.status?.toLowerCase();
  let mapped: { status: string; outstanding: number | undefined };
  if (status !== undefined && NOT_YET_SENT.has(status)) mapped = { status: 'DRAFT', outstanding: inv.balance };
  else if (status === 'void') mapped = { status: 'VOIDED', outstanding: 0 };
  else if (status === 'paid') mapped = { status: 'PAID', outstanding: 0 };
  else if (status !== undefined && COLLECTED.has(status)) mapped = { status: 'AUTHORISED', outstanding: inv.balance };
  else return `status ${status ?? '(none)'} is not one this adapter knows`;
  const draft = mapped.status === 'DRAFT';
  const date = zohoDate(inv.date) ?? inv.date;
  // Drafts may lack a due date or number; they are never pushed, so they must not become bad records for it.
  const dueDate = zohoDate(inv.due_date) ?? inv.due_date ?? (draft ? date : undefined);
  return defined({
    id: inv.invoice_id,
    contactId: inv.customer_id,
    updatedAt: zohoTimestamp(inv.last_modified_time) ?? inv.last_modified_time,
    status: mapped.status,
    deleted: false,
    number: inv.invoice_number ?? (draft ? inv.invoice_id : undefined),
    date,
    dueDate,
    total: inv.total,
    outstandingAmount: mapped.outstanding,
    currencyCode: inv.currency_code?.toUpperCase(),
    reference: inv.reference_number,
  });
}

/** A payment's record for one invoice it is applied to (also for a line it no longer has: `deleted`). */
export function paymentRecord(paymentId: string, invoiceId: string, f: { updatedAt: string; amount: number; date: string | undefined; reference?: string | undefined; deleted: boolean }): Record<string, unknown> {
  return defined({ id: `${paymentId}:${invoiceId}`, invoiceId, updatedAt: f.updatedAt, amount: f.amount, date: f.date, reference: f.reference, deleted: f.deleted });
}

/** What a payment's detail applies: invoice id -> amount (lines of 0 are no payment of that invoice). */
export function paymentLines(p: ZohoPayment): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of p.invoices ?? []) {
    if (line.invoice_id === undefined || line.amount_applied === undefined || line.amount_applied <= 0) continue;
    out[line.invoice_id] = (out[line.invoice_id] ?? 0) + line.amount_applied;
  }
  return out;
}

function bad<E extends Entity>(reason: string, id: string | undefined, position: ItemPosition | undefined): ZohoOutcome<E> {
  return { kind: 'bad', reason, ...(id !== undefined ? { platformId: id } : {}), ...(position !== undefined ? { position } : {}) };
}

function rawField(item: unknown, key: string): string | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const v = (item as Record<string, unknown>)[key];
  return typeof v === 'string' || typeof v === 'number' ? String(v) : undefined;
}

const ID_KEY: Record<Entity, string> = { contacts: 'contact_id', invoices: 'invoice_id', payments: 'payment_id' };

/** The zod issues of an item's shape, as `field: message` (never the value). */
function shapeError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(item)'}: ${i.message}`).join('; ');
}

/**
 * One raw item (a listing's, or a detail's for payments) -> its canonical records, or a bad record. A payment's
 * records need its detail (`invoices`); its listing item alone yields none.
 */
export function mapZohoItem<E extends Entity>(entity: E, item: unknown, organizationId: string): ZohoOutcome<E> {
  const rawId = rawField(item, ID_KEY[entity]);
  const rawPosition = positionOf(rawId, rawField(item, 'last_modified_time'));
  const finish = (raws: Record<string, unknown>[], position: ItemPosition | undefined, parsed: unknown): ZohoOutcome<E> => {
    if (position === undefined) return bad(`last_modified_time ${rawField(item, 'last_modified_time') === undefined ? 'is missing' : 'is not a Zoho timestamp'}`, rawId, undefined);
    const records: RecordOf[E][] = [];
    for (const raw of raws) {
      const checked = checkRecord(entity, raw);
      if (!checked.ok) return bad(checked.reason, rawId, position);
      records.push(checked.record);
    }
    return { kind: 'records', records, position, item: parsed as never };
  };
  if (entity === 'contacts') {
    const parsed = zohoContactSchema.safeParse(item);
    if (!parsed.success) return bad(shapeError(parsed.error.issues), rawId, rawPosition);
    return finish([contactRecordFrom(parsed.data, organizationId)], positionOf(parsed.data.contact_id, parsed.data.last_modified_time), parsed.data);
  }
  if (entity === 'invoices') {
    const parsed = zohoInvoiceSchema.safeParse(item);
    if (!parsed.success) return bad(shapeError(parsed.error.issues), rawId, rawPosition);
    const record = invoiceRecordFrom(parsed.data);
    if (typeof record === 'string') return bad(record, rawId, rawPosition);
    return finish([record], positionOf(parsed.data.invoice_id, parsed.data.last_modified_time), parsed.data);
  }
  const parsed = zohoPaymentSchema.safeParse(item);
  if (!parsed.success) return bad(shapeError(parsed.error.issues), rawId, rawPosition);
  const p = parsed.data;
  const position = positionOf(p.payment_id, p.last_modified_time);
  const updatedAt = zohoTimestamp(p.last_modified_time) ?? '';
  const date = zohoDate(p.date) ?? p.date;
  const raws = Object.entries(paymentLines(p)).map(([invoiceId, amount]) => paymentRecord(p.payment_id ?? '', invoiceId, { updatedAt, amount, date, reference: p.reference_number, deleted: false }));
  return finish(raws, position, p);
}
