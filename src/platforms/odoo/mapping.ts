/**
 * Odoo records -> canonical records (record-format.md). Each row is checked on its own: a malformed one is a bad record,
 * never a failed page. Decisions 0211 (payments), 0213 (credit notes, drafts, vendor bills) and 0214 (customers):
 * - Contacts are `res.partner` commercial entities (a company, or an individual without a parent company). An archived
 *   one (`active` false) is a deletion: reminders off; made active again, collected again. `customer_rank` 0 (a
 *   vendor, or a partner never invoiced) is `customer: false`: pushed once a receivable invoice needs it. Their child
 *   contacts of type `contact` and `invoice` are the secondary contacts (`persons`). `false` is never text: an empty
 *   name, phone or email is absent, never the string "false".
 * - Invoices are `account.move` rows with `move_type` out_invoice, read in state posted (collected while
 *   `amount_residual` is above 0, PAID at 0) or cancel (VOIDED: collecting stops). The customer is the move's
 *   `commercial_partner_id`. Drafts, vendor bills and credit notes are never read.
 * - Payments are `account.payment` rows (inbound, customer) reconciled with exactly one invoice: one record
 *   `<payment>:<invoice>` of the payment's amount. A cancelled or rejected payment is that record deleted.
 */
import type { Entity } from '../../glossary.js';
import { checkRecord, type RecordOf } from '../records.js';
import { moveSchema, partnerSchema, paymentSchema, type OdooMove, type OdooPartner, type OdooPayment } from './schemas.js';

/** An ORM datetime (naive UTC `YYYY-MM-DD HH:MM:SS`) as ISO 8601 UTC; undefined unless it is one. */
export function odooTimestamp(value: string | undefined): string | undefined {
  if (value === undefined || !/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(value)) return undefined;
  const ms = Date.parse(`${value.replace(' ', 'T')}Z`);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** An instant as the ORM writes it in a domain: naive UTC, whole seconds, rounded down. */
export function odooDatetime(iso: string): string {
  return new Date(Math.floor(Date.parse(iso) / 1000) * 1000).toISOString().slice(0, 19).replace('T', ' ');
}

/** A date field (`YYYY-MM-DD`) as written, or undefined (Odoo's `false`). */
function odooDate(value: string | undefined): string | undefined {
  return value !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(`${value}T00:00:00Z`)) ? value : undefined;
}

export const PARTNER_FIELDS = ['id', 'name', 'is_company', 'parent_id', 'type', 'active', 'email', 'phone', 'vat', 'street', 'street2', 'city', 'zip', 'country_id', 'customer_rank', 'write_date'] as const;
export const CHILD_FIELDS = ['id', 'name', 'email', 'phone', 'parent_id', 'type'] as const;
export const MOVE_FIELDS = ['id', 'name', 'move_type', 'state', 'commercial_partner_id', 'invoice_date', 'invoice_date_due', 'amount_total', 'amount_residual', 'currency_id', 'ref', 'company_id', 'write_date'] as const;
export const PAYMENT_FIELDS = ['id', 'name', 'amount', 'date', 'state', 'payment_type', 'partner_type', 'reconciled_invoice_ids', 'write_date'] as const;

/** Payment states that undo a payment (16 and 17: cancel; 18 and later: canceled, rejected). */
const UNDONE = new Set(['cancel', 'canceled', 'rejected']);

export type Outcome<E extends Entity> = { kind: 'records'; records: RecordOf[E][] } | { kind: 'bad'; reason: string; platformId?: string };

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

function shapeError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(row)'}: ${i.message}`).join('; ');
}

function rawId(row: unknown): string | undefined {
  const id = row !== null && typeof row === 'object' ? (row as Record<string, unknown>)['id'] : undefined;
  return typeof id === 'number' ? String(id) : undefined;
}

/** A child contact (`type` contact or invoice) as a person of its commercial entity. */
export function personFrom(row: unknown): Record<string, unknown> | undefined {
  const p = partnerSchema.partial({ write_date: true }).safeParse(row);
  if (!p.success) return undefined;
  const person = defined({ id: String(p.data.id), name: p.data.name, email: p.data.email, phoneNumber: p.data.phone });
  return Object.keys(person).some((k) => k !== 'id') ? person : undefined;
}

export function contactRecordFrom(p: OdooPartner, companyId: number, persons: Record<string, unknown>[] | undefined): Record<string, unknown> {
  const street = [p.street, p.street2].filter((s) => s !== undefined).join(', ');
  return defined({
    id: String(p.id),
    companyId: String(companyId),
    updatedAt: odooTimestamp(p.write_date),
    deleted: p.active === false,
    name: p.name ?? p.display_name,
    email: p.email,
    phoneNumber: p.phone,
    vatNumber: p.vat,
    street: street === '' ? undefined : street,
    city: p.city,
    postalCode: p.zip,
    country: p.country_id?.name,
    ...(persons !== undefined ? { persons } : {}),
    customer: p.customer_rank === undefined ? undefined : p.customer_rank > 0,
  });
}

export function invoiceRecordFrom(m: OdooMove): Record<string, unknown> | string {
  if (m.move_type !== 'out_invoice') return `move_type ${m.move_type} is not a customer invoice`;
  let status: string;
  let outstanding: number;
  if (m.state === 'cancel') [status, outstanding] = ['VOIDED', 0];
  else if (m.state === 'posted') [status, outstanding] = m.amount_residual <= 0 ? ['PAID', 0] : ['AUTHORISED', m.amount_residual];
  else return `state ${m.state} is not one this adapter collects`;
  const date = odooDate(m.invoice_date);
  return defined({
    id: String(m.id),
    contactId: m.commercial_partner_id !== undefined ? String(m.commercial_partner_id.id) : undefined,
    updatedAt: odooTimestamp(m.write_date),
    status,
    deleted: false,
    number: m.name === '/' ? undefined : m.name,
    date,
    dueDate: odooDate(m.invoice_date_due) ?? date,
    total: m.amount_total,
    outstandingAmount: Math.min(outstanding, m.amount_total),
    currencyCode: m.currency_id?.name?.toUpperCase(),
    reference: m.ref,
  });
}

/** A payment's link to the one invoice it pays (also a link it no longer has: `deleted`). */
export function paymentRecord(paymentId: number, invoiceId: number, f: { updatedAt: string | undefined; amount: number; date: string | undefined; reference?: string | undefined; deleted: boolean }): Record<string, unknown> {
  return defined({ id: `${paymentId}:${invoiceId}`, invoiceId: String(invoiceId), updatedAt: f.updatedAt, amount: f.amount, date: f.date, reference: f.reference, deleted: f.deleted });
}

/** The invoice a payment pays, when it pays exactly one (decision 0211); undefined otherwise. */
export function paidInvoice(p: OdooPayment): number | undefined {
  return p.reconciled_invoice_ids.length === 1 ? p.reconciled_invoice_ids[0] : undefined;
}

export function isUndone(p: OdooPayment): boolean {
  return UNDONE.has(p.state);
}

function finish<E extends Entity>(entity: E, raws: Record<string, unknown>[], id: string | undefined): Outcome<E> {
  const records: RecordOf[E][] = [];
  for (const raw of raws) {
    const checked = checkRecord(entity, raw);
    if (!checked.ok) return { kind: 'bad', reason: checked.reason, ...(id !== undefined ? { platformId: id } : {}) };
    records.push(checked.record);
  }
  return { kind: 'records', records };
}

function bad<E extends Entity>(reason: string, id: string | undefined): Outcome<E> {
  return { kind: 'bad', reason, ...(id !== undefined ? { platformId: id } : {}) };
}

export function mapPartner(row: unknown, companyId: number, persons: Record<string, unknown>[] | undefined): Outcome<'contacts'> {
  const parsed = partnerSchema.safeParse(row);
  if (!parsed.success) return bad(shapeError(parsed.error.issues), rawId(row));
  return finish('contacts', [contactRecordFrom(parsed.data, companyId, persons)], rawId(row));
}

export function mapMove(row: unknown): Outcome<'invoices'> {
  const parsed = moveSchema.safeParse(row);
  if (!parsed.success) return bad(shapeError(parsed.error.issues), rawId(row));
  const record = invoiceRecordFrom(parsed.data);
  if (typeof record === 'string') return bad(record, rawId(row));
  return finish('invoices', [record], rawId(row));
}

/** A payment's records: its link to the invoice it pays (deleted when undone), and `previous` (a link it had) deleted. */
export function mapPayment(row: unknown, previous: { invoiceId: number; amount: number; date: string } | undefined): Outcome<'payments'> & { link?: { invoiceId: number; amount: number; date: string } | null } {
  const parsed = paymentSchema.safeParse(row);
  if (!parsed.success) return bad<'payments'>(shapeError(parsed.error.issues), rawId(row));
  const p = parsed.data;
  const updatedAt = odooTimestamp(p.write_date);
  const date = odooDate(p.date);
  const invoice = isUndone(p) ? undefined : paidInvoice(p);
  const raws: Record<string, unknown>[] = [];
  if (previous !== undefined && previous.invoiceId !== invoice) raws.push(paymentRecord(p.id, previous.invoiceId, { updatedAt, amount: previous.amount, date: previous.date, reference: p.name, deleted: true }));
  if (invoice !== undefined) raws.push(paymentRecord(p.id, invoice, { updatedAt, amount: p.amount, date, reference: p.name, deleted: false }));
  const out = finish<'payments'>('payments', raws, rawId(row));
  if (out.kind === 'bad') return out;
  return { ...out, link: invoice !== undefined && date !== undefined ? { invoiceId: invoice, amount: p.amount, date } : null };
}
