/**
 * QuickBooks Online customers, invoices and payments -> canonical records (record-format.md). Each item is
 * checked on its own: a malformed one becomes a bad record placed `quickbooks:<Entity> <Id>`, never a failed page.
 *
 * Decisions (docs/decisions 0060-0069):
 * - Customers are never deleted in QuickBooks, only made inactive: `Active=false` is a deletion (stop collecting);
 *   made active again, the contact is pushed again.
 * - A sub-customer (`ParentRef`; a job when `Job=true`) is its own contact, named by its `FullyQualifiedName`
 *   (`Parent:Job`), and its invoices are its debt (docs/decisions/0061 says why not the parent's).
 * - Contact fields: `DisplayName` is the name (`FullyQualifiedName` for a sub-customer), `GivenName`/`FamilyName`
 *   the first and last names, the first address of `PrimaryEmailAddr` (QuickBooks allows a comma-separated list),
 *   `Mobile` before `PrimaryPhone` (as Xero's mobile-first), `BillAddr` lines joined as `street` with `City`,
 *   `PostalCode`, `Country` (the state, `CountrySubDivisionCode`, has no canonical field), `AcctNum` as `otherId`.
 * - Invoices: `Balance` is the outstanding amount (authoritative: payments and credit memos both lower it);
 *   Balance 0 is PAID; TotalAmt and Balance 0 with "Voided" in `PrivateNote` is VOIDED (how QuickBooks shows a
 *   void); without `DueDate` the invoice is due on its `TxnDate`; without `DocNumber` (custom numbering off) it is
 *   numbered by its Id.
 * - Payments: one canonical payment per invoice a payment settles (`Line[].LinkedTxn[]` with `TxnType=Invoice`),
 *   id `<PaymentId>:<InvoiceId>`, amount the line's; lines on credit memos or journal entries are not payments of
 *   an invoice. A line linking two invoices cannot be split: the payment is a bad record.
 */
import type { Entity } from '../../glossary.js';
import { checkRecord, type ContactRecord, type InvoiceRecord, type PaymentRecord } from '../records.js';
import { qboCustomerSchema, qboInvoiceSchema, qboPaymentSchema, QBO_ENTITY, type QboAddress, type QboCustomer, type QboInvoice, type QboPayment } from './schemas.js';

/** Where an item sits in (LastUpdatedTime, Id) order, when both are readable (for paging, even for bad items). */
export interface ItemPosition {
  ms: number;
  id: string;
}

/** What one payment settles: invoice id -> amount (what the adapter remembers, to undo a line later). */
export type PaymentLines = Record<string, number>;

export type QboOutcome<E extends Entity> =
  | { kind: 'records'; records: RecordOf<E>[]; position: ItemPosition; lines?: PaymentLines; date?: string }
  | { kind: 'bad'; reason: string; platformId?: string; position?: ItemPosition };

type RecordOf<E extends Entity> = E extends 'contacts' ? ContactRecord : E extends 'invoices' ? InvoiceRecord : PaymentRecord;

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;
const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A QuickBooks timestamp (`2015-07-24T10:33:39-07:00`) as epoch ms; undefined unless it names its offset. */
export function qboMs(value: string | undefined): number | undefined {
  if (value === undefined || !ISO_WITH_OFFSET.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** A QuickBooks date (`2015-07-24`, or a timestamp whose date part is taken as written). */
export function qboDate(value: string | undefined): string | undefined {
  const head = value?.slice(0, 10);
  return head !== undefined && DATE.test(head) ? head : undefined;
}

function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

function positionOf(id: string | undefined, updated: string | undefined): ItemPosition | undefined {
  const ms = qboMs(updated);
  return id === undefined || ms === undefined ? undefined : { ms, id };
}

function stamp(updated: string | undefined): string | undefined {
  const ms = qboMs(updated);
  return ms === undefined ? updated : new Date(ms).toISOString();
}

/** The billing address as canonical fields. */
export function addressFields(a: QboAddress | null | undefined): Record<string, string> {
  if (a === null || a === undefined) return {};
  const out: Record<string, string> = {};
  const street = [a.Line1, a.Line2, a.Line3, a.Line4, a.Line5].filter((l) => l !== undefined).join(', ');
  if (street !== '') out['street'] = street;
  if (a.City !== undefined) out['city'] = a.City;
  if (a.PostalCode !== undefined) out['postalCode'] = a.PostalCode;
  if (a.Country !== undefined) out['country'] = a.Country;
  return out;
}

/** The first address of a possibly comma- or semicolon-separated list. */
export function firstEmail(value: string | undefined): string | undefined {
  const first = value?.split(/[,;]/)[0]?.trim();
  return first === undefined || first === '' ? undefined : first;
}

export function contactRecordFrom(c: QboCustomer, realmId: string): Record<string, unknown> {
  const sub = c.ParentRef?.value !== undefined || c.Job === true;
  const given = [c.GivenName, c.FamilyName].filter((v) => v !== undefined).join(' ');
  return defined({
    id: c.Id,
    companyId: realmId,
    updatedAt: stamp(c.MetaData?.LastUpdatedTime),
    deleted: c.Active === false,
    name: (sub ? c.FullyQualifiedName : undefined) ?? c.DisplayName ?? c.CompanyName ?? (given === '' ? undefined : given),
    firstName: c.GivenName,
    lastName: c.FamilyName,
    email: firstEmail(c.PrimaryEmailAddr?.Address),
    phoneNumber: c.Mobile?.FreeFormNumber ?? c.PrimaryPhone?.FreeFormNumber,
    otherId: c.AcctNum,
    ...addressFields(c.BillAddr),
  });
}

/** QuickBooks shows a voided invoice as TotalAmt 0 and Balance 0 with "Voided" in its private note. */
export function isVoided(inv: Pick<QboInvoice, 'TotalAmt' | 'Balance' | 'PrivateNote'>): boolean {
  return inv.TotalAmt === 0 && (inv.Balance ?? 0) === 0 && /\bvoided\b/i.test(inv.PrivateNote ?? '');
}

export function invoiceRecordFrom(inv: QboInvoice): Record<string, unknown> {
  const voided = isVoided(inv);
  const date = qboDate(inv.TxnDate) ?? inv.TxnDate;
  return defined({
    id: inv.Id,
    contactId: inv.CustomerRef?.value,
    updatedAt: stamp(inv.MetaData?.LastUpdatedTime),
    status: voided ? 'VOIDED' : inv.Balance === 0 ? 'PAID' : 'AUTHORISED',
    deleted: false,
    number: inv.DocNumber ?? inv.Id,
    date,
    dueDate: inv.DueDate === undefined ? date : (qboDate(inv.DueDate) ?? inv.DueDate),
    total: inv.TotalAmt,
    outstandingAmount: inv.Balance,
    currencyCode: inv.CurrencyRef?.value?.toUpperCase(),
  });
}

/** Invoice id -> amount the payment puts on it, or why the lines cannot be read. */
export function paymentLines(p: QboPayment): { ok: true; lines: PaymentLines } | { ok: false; reason: string } {
  const lines: PaymentLines = {};
  for (const [i, line] of (p.Line ?? []).entries()) {
    const invoices = (line.LinkedTxn ?? []).filter((t) => t.TxnType?.toLowerCase() === 'invoice');
    if (invoices.length === 0) continue;
    if (invoices.length > 1) return { ok: false, reason: `Line[${i}]: links ${invoices.length} invoices; one line's amount cannot be split between them` };
    const id = invoices[0]?.TxnId;
    if (id === undefined) return { ok: false, reason: `Line[${i}].LinkedTxn: TxnId required` };
    if (line.Amount === undefined) return { ok: false, reason: `Line[${i}].Amount: required` };
    lines[id] = Math.round(((lines[id] ?? 0) + line.Amount) * 1e6) / 1e6;
  }
  return { ok: true, lines };
}

/** One canonical payment of `paymentId` on one invoice. */
export function paymentRecord(paymentId: string, invoiceId: string, fields: { updatedAt: string; amount: number; date: string; reference?: string; deleted: boolean }): Record<string, unknown> {
  return defined({ id: `${paymentId}:${invoiceId}`, invoiceId, ...fields });
}

function shapeError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(item)'}: ${i.message}`).join('; ');
}

function rawPosition(item: unknown): { id?: string; position?: ItemPosition } {
  if (item === null || typeof item !== 'object') return {};
  const o = item as Record<string, unknown>;
  const id = typeof o['Id'] === 'string' && o['Id'].trim() !== '' ? o['Id'].trim() : undefined;
  const meta = o['MetaData'];
  const updated = meta !== null && typeof meta === 'object' ? (meta as Record<string, unknown>)['LastUpdatedTime'] : undefined;
  const position = positionOf(id, typeof updated === 'string' ? updated : undefined);
  return { ...(id !== undefined ? { id } : {}), ...(position !== undefined ? { position } : {}) };
}

function bad<E extends Entity>(reason: string, id: string | undefined, position: ItemPosition | undefined): QboOutcome<E> {
  const out: QboOutcome<E> = { kind: 'bad', reason };
  if (id !== undefined) out.platformId = id;
  if (position !== undefined) out.position = position;
  return out;
}

/** Checks built records; the first failure makes the whole item bad. */
function checkedAll<E extends Entity>(entity: E, raws: Record<string, unknown>[], id: string | undefined, position: ItemPosition | undefined): QboOutcome<E> {
  const records: RecordOf<E>[] = [];
  for (const raw of raws) {
    const result = checkRecord(entity, raw);
    if (!result.ok) return bad(result.reason, id, position);
    records.push(result.record as RecordOf<E>);
  }
  if (position === undefined) return bad('MetaData.LastUpdatedTime: unreadable (ISO 8601 with offset expected)', id, position);
  return { kind: 'records', records, position };
}

/** One raw QuickBooks entity -> canonical records (none, one, or one per settled invoice) or a bad record. */
export function mapQboItem<E extends Entity>(entity: E, item: unknown, realmId: string): QboOutcome<E> {
  const raw = rawPosition(item);
  if (entity === 'contacts') {
    const parsed = qboCustomerSchema.safeParse(item);
    if (!parsed.success) return bad(shapeError(parsed.error.issues), raw.id, raw.position);
    return checkedAll(entity, [contactRecordFrom(parsed.data, realmId)], raw.id, raw.position);
  }
  if (entity === 'invoices') {
    const parsed = qboInvoiceSchema.safeParse(item);
    if (!parsed.success) return bad(shapeError(parsed.error.issues), raw.id, raw.position);
    return checkedAll(entity, [invoiceRecordFrom(parsed.data)], raw.id, raw.position);
  }
  const parsed = qboPaymentSchema.safeParse(item);
  if (!parsed.success) return bad(shapeError(parsed.error.issues), raw.id, raw.position);
  const p = parsed.data;
  const lines = paymentLines(p);
  if (!lines.ok) return bad(lines.reason, raw.id, raw.position);
  const date = qboDate(p.TxnDate);
  if (date === undefined) return bad('TxnDate: required (YYYY-MM-DD)', raw.id, raw.position);
  if (raw.id === undefined) return bad('Id: required', undefined, raw.position);
  const updatedAt = stamp(p.MetaData?.LastUpdatedTime) ?? '';
  const paymentId = raw.id;
  const records = Object.entries(lines.lines)
    .filter(([, amount]) => amount > 0)
    .map(([invoiceId, amount]) => paymentRecord(paymentId, invoiceId, { updatedAt, amount, date, ...(p.PaymentRefNum !== undefined ? { reference: p.PaymentRefNum } : {}), deleted: false }));
  const out = checkedAll(entity, records, raw.id, raw.position);
  return out.kind === 'records' ? { ...out, lines: lines.lines, date } : out;
}

/** `quickbooks:Invoice 1042`: where a bad record came from. */
export function placeOf(entity: Entity, id: string | undefined, fallback: string): string {
  return `quickbooks:${QBO_ENTITY[entity]} ${id ?? fallback}`;
}
