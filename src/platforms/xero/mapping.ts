/**
 * Xero contacts, invoices and payments -> canonical records (record-format.md). Each item is checked on its own:
 * a malformed one becomes a bad record, never a failed page.
 *
 * Decisions (docs/decisions):
 * - Contacts: `ContactStatus` ARCHIVED (and GDPRREQUEST, an erased contact) is a deletion. The phone is the first
 *   usable one of MOBILE, DEFAULT, DDI, OFFICE (never FAX), written `+<country> <area> <number>` (the area's
 *   trunk 0 dropped when a country code is given) or `<area> <number>`; a number already starting with `+` is
 *   kept as it is. The address is the STREET address when it has any content, else the POBOX one: its lines
 *   joined with ", " as `street`, with `city`, `postalCode`, `country` (Xero's `Region` has no canonical field).
 *   `TaxNumber` is the VAT number, `ContactNumber` the `otherId`, `BankAccountDetails` the `accountNumber`.
 *   `ContactPersons` (which have no id in Xero) become `persons` named "First Last". `IsCustomer` is `customer`:
 *   a contact Xero does not flag a customer (a supplier only, or one with no sales yet) is not pushed until a
 *   receivable invoice needs it (then the sync asks for it by id: `XeroAdapter.readContacts`).
 * - Invoices: only `Type` ACCREC (receivables); bills and credit notes are skipped (credit notes already reduce
 *   `AmountDue`). DRAFT and SUBMITTED are DRAFT; DELETED (Xero deletes only drafts and submitted invoices) is a
 *   deleted DRAFT, which is never pushed. `AmountDue` is the outstanding amount.
 * - Payments: only payments on receivable invoices (`PaymentType` ACCRECPAYMENT, `Invoice.Type` ACCREC); Xero
 *   has no collections-service id for them, so `paymentUuid` is absent. `Status` DELETED is a deletion.
 */
import type { Entity } from '../../glossary.js';
import { checkRecord, type RecordOf } from '../records.js';
import { parseXeroDate, xeroDate, xeroTimestamp } from './dates.js';
import {
  xeroContactSchema,
  xeroInvoiceSchema,
  xeroPaymentSchema,
  type XeroAddress,
  type XeroContact,
  type XeroInvoice,
  type XeroPayment,
  type XeroPhone,
} from './schemas.js';

/** Where an item sits in (UpdatedDateUTC, id) order, when both are readable (for paging, even for bad items). */
export interface ItemPosition {
  ms: number;
  id: string;
}

export type ItemOutcome<E extends Entity> =
  | { kind: 'record'; record: RecordOf[E]; position: ItemPosition }
  | { kind: 'skip'; reason: string; position?: ItemPosition }
  | { kind: 'bad'; reason: string; platformId?: string; position?: ItemPosition };

const PHONE_PREFERENCE = ['MOBILE', 'DEFAULT', 'DDI', 'OFFICE'] as const;

const digits = (v: string | undefined): string => (v ?? '').replace(/\D+/g, '');

/** One Xero phone as a single dialable string; undefined without a number. */
export function formatPhone(phone: XeroPhone): string | undefined {
  const number = phone.PhoneNumber;
  if (number === undefined || digits(number) === '') return undefined;
  if (number.startsWith('+')) return number;
  const country = digits(phone.PhoneCountryCode);
  if (country !== '') {
    const area = digits(phone.PhoneAreaCode).replace(/^0+/, '');
    return [`+${country}`, area, number].filter((p) => p !== '').join(' ');
  }
  return [phone.PhoneAreaCode, number].filter((p) => p !== undefined && p !== '').join(' ');
}

/** The contact's phone: mobile first, then the default, direct and office lines; never a fax. */
export function pickPhone(phones: readonly XeroPhone[] | null | undefined): string | undefined {
  for (const type of PHONE_PREFERENCE) {
    for (const phone of phones ?? []) {
      if (phone.PhoneType?.toUpperCase() !== type) continue;
      const formatted = formatPhone(phone);
      if (formatted !== undefined) return formatted;
    }
  }
  return undefined;
}

const hasContent = (a: XeroAddress): boolean =>
  [a.AddressLine1, a.AddressLine2, a.AddressLine3, a.AddressLine4, a.City, a.PostalCode, a.Country].some((v) => v !== undefined);

/** The street address when it has content, else the PO box. */
export function pickAddress(addresses: readonly XeroAddress[] | null | undefined): Record<string, string> {
  const list = addresses ?? [];
  const chosen =
    list.find((a) => a.AddressType?.toUpperCase() === 'STREET' && hasContent(a)) ??
    list.find((a) => a.AddressType?.toUpperCase() === 'POBOX' && hasContent(a));
  if (chosen === undefined) return {};
  const out: Record<string, string> = {};
  const street = [chosen.AddressLine1, chosen.AddressLine2, chosen.AddressLine3, chosen.AddressLine4].filter((l) => l !== undefined).join(', ');
  if (street !== '') out['street'] = street;
  if (chosen.City !== undefined) out['city'] = chosen.City;
  if (chosen.PostalCode !== undefined) out['postalCode'] = chosen.PostalCode;
  if (chosen.Country !== undefined) out['country'] = chosen.Country;
  return out;
}

/** Copies the defined values only (canonical records have no explicit undefined). */
function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

function positionOf(id: string | undefined, updated: string | undefined): ItemPosition | undefined {
  const instant = parseXeroDate(updated);
  return id === undefined || instant === undefined ? undefined : { ms: instant.ms, id };
}

/** Runs the canonical check on a built record. */
function checked<E extends Entity>(entity: E, raw: Record<string, unknown>, id: string | undefined, position: ItemPosition | undefined): ItemOutcome<E> {
  const result = checkRecord(entity, raw);
  if (result.ok && position !== undefined) return { kind: 'record', record: result.record, position };
  const reason = result.ok ? 'UpdatedDateUTC: unreadable' : result.reason;
  const bad: ItemOutcome<E> = { kind: 'bad', reason };
  if (id !== undefined) bad.platformId = id;
  if (position !== undefined) bad.position = position;
  return bad;
}

/** The shape check of one raw item; the reason names the field, never its value. */
function shapeError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return issues.map((i) => `${i.path.map(String).join('.') || '(item)'}: ${i.message}`).join('; ');
}

function rawIdOf(item: unknown, key: string): string | undefined {
  if (item === null || typeof item !== 'object') return undefined;
  const v = (item as Record<string, unknown>)[key];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

export function contactRecordFrom(c: XeroContact, companyId: string): Record<string, unknown> {
  const status = c.ContactStatus?.toUpperCase();
  const persons = (c.ContactPersons ?? [])
    .map((p) => {
      const name = [p.FirstName, p.LastName].filter((v) => v !== undefined).join(' ');
      return defined({ name: name === '' ? undefined : name, firstName: p.FirstName, lastName: p.LastName, email: p.EmailAddress });
    })
    .filter((p) => Object.keys(p).length > 0);
  return defined({
    id: c.ContactID,
    companyId,
    updatedAt: xeroTimestamp(c.UpdatedDateUTC) ?? c.UpdatedDateUTC,
    deleted: status === 'ARCHIVED' || status === 'GDPRREQUEST',
    name: c.Name,
    firstName: c.FirstName,
    lastName: c.LastName,
    email: c.EmailAddress,
    phoneNumber: pickPhone(c.Phones),
    vatNumber: c.TaxNumber,
    otherId: c.ContactNumber,
    accountNumber: c.BankAccountDetails,
    ...pickAddress(c.Addresses),
    ...(c.ContactPersons !== undefined && c.ContactPersons !== null ? { persons } : {}),
    customer: c.IsCustomer ?? undefined,
  });
}

const INVOICE_STATUS: Record<string, { status: string; deleted: boolean }> = {
  DRAFT: { status: 'DRAFT', deleted: false },
  SUBMITTED: { status: 'DRAFT', deleted: false },
  AUTHORISED: { status: 'AUTHORISED', deleted: false },
  PAID: { status: 'PAID', deleted: false },
  VOIDED: { status: 'VOIDED', deleted: false },
  DELETED: { status: 'DRAFT', deleted: true },
};

export function invoiceRecordFrom(inv: XeroInvoice): Record<string, unknown> {
  const mapped = inv.Status === undefined ? undefined : INVOICE_STATUS[inv.Status.toUpperCase()];
  const draft = mapped?.status === 'DRAFT';
  const date = xeroDate(inv.Date) ?? xeroDate(inv.DateString) ?? inv.Date;
  let dueDate = xeroDate(inv.DueDate) ?? xeroDate(inv.DueDateString) ?? inv.DueDate;
  // Drafts may lack a due date or number; they are never pushed, so they must not become bad records for it.
  if (dueDate === undefined && draft) dueDate = date;
  return defined({
    id: inv.InvoiceID,
    contactId: inv.Contact?.ContactID,
    updatedAt: xeroTimestamp(inv.UpdatedDateUTC) ?? inv.UpdatedDateUTC,
    status: mapped?.status ?? inv.Status,
    deleted: mapped?.deleted ?? false,
    number: inv.InvoiceNumber ?? (draft ? inv.InvoiceID : undefined),
    date,
    dueDate,
    total: inv.Total,
    outstandingAmount: inv.AmountDue,
    currencyCode: inv.CurrencyCode?.toUpperCase(),
    reference: inv.Reference,
  });
}

export function paymentRecordFrom(p: XeroPayment): Record<string, unknown> {
  return defined({
    id: p.PaymentID,
    invoiceId: p.Invoice?.InvoiceID,
    updatedAt: xeroTimestamp(p.UpdatedDateUTC) ?? p.UpdatedDateUTC,
    amount: p.Amount,
    date: xeroDate(p.Date) ?? p.Date,
    reference: p.Reference,
    deleted: p.Status?.toUpperCase() === 'DELETED',
  });
}

/** One raw item of a Xero listing -> a canonical record, a silent skip (not ours to sync), or a bad record. */
export function mapXeroItem<E extends Entity>(entity: E, item: unknown, companyId: string): ItemOutcome<E> {
  if (entity === 'contacts') {
    const parsed = xeroContactSchema.safeParse(item);
    const id = rawIdOf(item, 'ContactID');
    if (!parsed.success) return badShape(shapeError(parsed.error.issues), id, item);
    const c = parsed.data;
    return checked(entity, contactRecordFrom(c, companyId), c.ContactID, positionOf(c.ContactID, c.UpdatedDateUTC));
  }
  if (entity === 'invoices') {
    const parsed = xeroInvoiceSchema.safeParse(item);
    const id = rawIdOf(item, 'InvoiceID');
    if (!parsed.success) return badShape(shapeError(parsed.error.issues), id, item);
    const inv = parsed.data;
    const position = positionOf(inv.InvoiceID, inv.UpdatedDateUTC);
    if (inv.Type?.toUpperCase() !== 'ACCREC') return skip(`Type ${inv.Type ?? '(none)'} is not a receivable`, position);
    return checked(entity, invoiceRecordFrom(inv), inv.InvoiceID, position);
  }
  const parsed = xeroPaymentSchema.safeParse(item);
  const id = rawIdOf(item, 'PaymentID');
  if (!parsed.success) return badShape(shapeError(parsed.error.issues), id, item);
  const p = parsed.data;
  const position = positionOf(p.PaymentID, p.UpdatedDateUTC);
  const type = p.PaymentType?.toUpperCase();
  const invoiceType = p.Invoice?.Type?.toUpperCase();
  if ((type !== undefined && type !== 'ACCRECPAYMENT') || (invoiceType !== undefined && invoiceType !== 'ACCREC')) {
    return skip(`PaymentType ${type ?? '(none)'} on ${invoiceType ?? '(none)'} is not a receivable payment`, position);
  }
  return checked(entity, paymentRecordFrom(p), p.PaymentID, position);
}

function skip<E extends Entity>(reason: string, position: ItemPosition | undefined): ItemOutcome<E> {
  return position === undefined ? { kind: 'skip', reason } : { kind: 'skip', reason, position };
}

function badShape<E extends Entity>(reason: string, id: string | undefined, item: unknown): ItemOutcome<E> {
  const out: ItemOutcome<E> = { kind: 'bad', reason };
  if (id !== undefined) out.platformId = id;
  const updated = item !== null && typeof item === 'object' ? (item as Record<string, unknown>)['UpdatedDateUTC'] : undefined;
  const position = positionOf(id, typeof updated === 'string' ? updated : undefined);
  if (position !== undefined) out.position = position;
  return out;
}
