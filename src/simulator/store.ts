/**
 * One client's (tenant's) data in memory: contacts, invoices, payments and calls, with the indexes that keep every
 * write O(1): contacts by uuid and by phone digits, invoices by uuid, by extPlatformId and by (contact, number).
 * Records are never deleted (the service has no delete endpoint), so creation order is kept in plain arrays.
 */
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type {
  contactCreateSchema,
  contactUpdateSchema,
  invoiceUpsertSchema,
  paymentUpdateSchema,
  secondaryContactSchema,
  secondaryContactUpdateSchema,
} from '../collections/schemas.js';
import { notFound } from './http.js';
import type { SeedPayment, StoredCall } from './types.js';

type ContactCreateParsed = z.output<typeof contactCreateSchema>;
type ContactUpdateParsed = z.output<typeof contactUpdateSchema>;
type InvoiceUpsertParsed = z.output<typeof invoiceUpsertSchema>;
type PaymentUpdateParsed = z.output<typeof paymentUpdateSchema>;

/** The request fields of a contact as stored (everything but role, secondary contacts and uuid). */
export type ContactFields = Omit<ContactCreateParsed, 'secondaryContacts' | 'role'>;
export type SecondaryRec = z.output<typeof secondaryContactSchema> & { uuid: string };
type SecondaryUpdateParsed = z.output<typeof secondaryContactUpdateSchema>;

export interface ContactRec {
  readonly uuid: string;
  fields: ContactFields;
  role: 'PRIMARY' | 'SECONDARY';
  secondary: SecondaryRec[];
  nameLower: string;
  /** Digits of phoneNumber ('' when none): the bulk-call match key. */
  phoneDigits: string;
  readonly invoices: Set<InvoiceRec>;
}

export type InvoiceFields = Stored<Omit<InvoiceUpsertParsed, 'uuid' | 'contactUuid' | 'outstandingAmount'>>;

export interface InvoiceRec {
  readonly uuid: string;
  contact: ContactRec;
  fields: InvoiceFields;
  /** outstandingAmount as sent by the last create-update; null = computed from payments. */
  outstandingSent: number | null;
  outstanding: number;
  status: 'PAID' | 'UNPAID';
  paidDate: string | null;
  readonly createdAt: string;
  readonly payments: Set<PaymentRec>;
}

export interface PaymentRec {
  readonly uuid: string;
  readonly invoice: InvoiceRec;
  amount: number;
  date: string;
  reference: string | null;
  notes: string | null;
  paymentType: string;
}

/** A payment as the admin call seeds it (the interface has no payment create). */
export type NewPayment = SeedPayment;

/** Money sums without binary noise (0.1 + 0.2 = 0.3); amounts are kept to 6 decimals. */
export const money = (x: number): number => Math.round(x * 1e6) / 1e6;
export const digitsOf = (phone: string | null | undefined): string => (phone ?? '').replace(/\D/g, '');

/** `T` as stored: a field is a value or absent, never null. */
type Stored<T> = { [K in keyof T]: Exclude<T[K], null> };

/**
 * A request's fields over the stored ones: an absent (undefined) field keeps the stored value, a null one clears
 * it (answered as null, like any unset field).
 */
function merged<T extends object>(stored: Stored<T>, changes: T): Stored<T> {
  const out: Record<string, unknown> = { ...stored };
  for (const [k, v] of Object.entries(changes)) {
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = v;
  }
  return out as Stored<T>;
}

export class TenantStore {
  readonly contacts = new Map<string, ContactRec>();
  readonly contactList: ContactRec[] = [];
  readonly invoices = new Map<string, InvoiceRec>();
  readonly invoiceList: InvoiceRec[] = [];
  readonly payments = new Map<string, PaymentRec>();
  readonly paymentList: PaymentRec[] = [];
  readonly calls: StoredCall[] = [];
  readonly #byPhone = new Map<string, Set<ContactRec>>();
  readonly #invoiceByExt = new Map<string, InvoiceRec>();
  readonly #invoiceByNumber = new Map<string, InvoiceRec>();

  // ---------- contacts ----------
  createContact(body: ContactCreateParsed): ContactRec {
    const { secondaryContacts, role, ...fields } = body;
    const rec: ContactRec = {
      uuid: randomUUID(),
      fields,
      role: role ?? 'PRIMARY',
      secondary: (secondaryContacts ?? []).map((s) => ({ ...s, uuid: s.uuid ?? randomUUID() })),
      nameLower: fields.name.toLowerCase(),
      phoneDigits: '',
      invoices: new Set(),
    };
    this.contacts.set(rec.uuid, rec);
    this.contactList.push(rec);
    this.#indexPhone(rec);
    return rec;
  }

  /**
   * PUT /contact: the given fields replace the stored ones, null ones are cleared, absent ones are kept; given
   * secondary contacts replace the stored list.
   */
  updateContact(body: ContactUpdateParsed): ContactRec {
    const rec = this.contacts.get(body.uuid.toLowerCase());
    if (!rec) throw notFound('Contact');
    const { uuid: _uuid, secondaryContacts, ...changes } = body;
    // `name` stays: required on create, it cannot be cleared (null is refused for it).
    rec.fields = merged(rec.fields, changes) as ContactFields;
    if (secondaryContacts) {
      rec.secondary = secondaryContacts.map((s) => ({ ...merged<SecondaryUpdateParsed>({}, s), uuid: s.uuid ?? randomUUID() }));
    }
    rec.nameLower = rec.fields.name.toLowerCase();
    this.#indexPhone(rec);
    return rec;
  }

  /** The first contact (in creation order) whose phone number has the same digits. */
  findByPhone(numberToCall: string): ContactRec | undefined {
    const digits = digitsOf(numberToCall);
    if (digits === '') return undefined;
    for (const rec of this.#byPhone.get(digits) ?? []) return rec;
    return undefined;
  }

  #indexPhone(rec: ContactRec): void {
    const digits = digitsOf(rec.fields.phoneNumber);
    if (digits === rec.phoneDigits) return;
    if (rec.phoneDigits !== '') this.#byPhone.get(rec.phoneDigits)?.delete(rec);
    rec.phoneDigits = digits;
    if (digits === '') return;
    let set = this.#byPhone.get(digits);
    if (!set) this.#byPhone.set(digits, (set = new Set()));
    set.add(rec);
  }

  // ---------- invoices ----------
  /**
   * POST /invoice/create-update. Matching: `uuid` -> that invoice (404 if unknown); else the invoice with the same
   * extPlatformId; else the one with the same (contactUuid, number); else a new invoice. On update the given fields
   * replace the stored ones, null ones are cleared and absent optional fields are kept, except outstandingAmount:
   * absent means "computed from the invoice's payments" (max(0, total - payments)).
   */
  upsertInvoice(body: InvoiceUpsertParsed, today: string): InvoiceRec {
    const contact = this.contacts.get(body.contactUuid.toLowerCase());
    if (!contact) throw notFound('Contact');
    const { uuid, contactUuid: _contactUuid, outstandingAmount, ...fields } = body;
    let rec: InvoiceRec | undefined;
    if (uuid !== undefined) {
      rec = this.invoices.get(uuid.toLowerCase());
      if (!rec) throw notFound('Invoice');
    } else {
      rec = (fields.extPlatformId !== undefined ? this.#invoiceByExt.get(fields.extPlatformId) : undefined) ??
        this.#invoiceByNumber.get(`${contact.uuid}\u0000${fields.number}`);
    }
    if (!rec) {
      rec = {
        uuid: randomUUID(),
        contact,
        fields: merged<typeof fields>({} as InvoiceFields, fields),
        outstandingSent: outstandingAmount ?? null,
        outstanding: 0,
        status: 'UNPAID',
        paidDate: null,
        createdAt: today,
        payments: new Set(),
      };
      this.invoices.set(rec.uuid, rec);
      this.invoiceList.push(rec);
      contact.invoices.add(rec);
    } else {
      this.#unindexInvoice(rec);
      if (rec.contact !== contact) {
        rec.contact.invoices.delete(rec);
        contact.invoices.add(rec);
        rec.contact = contact;
      }
      rec.fields = merged(rec.fields, fields);
      rec.outstandingSent = outstandingAmount ?? null;
    }
    this.#indexInvoice(rec);
    this.refreshInvoice(rec, today);
    return rec;
  }

  /** Recomputes outstanding and status; paidDate is set when the invoice becomes PAID, cleared if it is unpaid again. */
  refreshInvoice(rec: InvoiceRec, today: string): void {
    let paid = 0;
    for (const p of rec.payments) paid += p.amount;
    rec.outstanding = rec.outstandingSent ?? Math.max(0, money(rec.fields.total - paid));
    const status = rec.outstanding <= 0 ? 'PAID' : 'UNPAID';
    if (status === 'PAID' && rec.status !== 'PAID') rec.paidDate = today;
    if (status === 'UNPAID') rec.paidDate = null;
    rec.status = status;
  }

  #indexInvoice(rec: InvoiceRec): void {
    if (rec.fields.extPlatformId !== undefined) this.#invoiceByExt.set(rec.fields.extPlatformId, rec);
    this.#invoiceByNumber.set(`${rec.contact.uuid}\u0000${rec.fields.number}`, rec);
  }

  #unindexInvoice(rec: InvoiceRec): void {
    const ext = rec.fields.extPlatformId;
    if (ext !== undefined && this.#invoiceByExt.get(ext) === rec) this.#invoiceByExt.delete(ext);
    const key = `${rec.contact.uuid}\u0000${rec.fields.number}`;
    if (this.#invoiceByNumber.get(key) === rec) this.#invoiceByNumber.delete(key);
  }

  // ---------- payments ----------
  /**
   * A payment on an invoice (simulator-only: the interface has no payment create endpoint). Payments change the
   * invoice's outstanding only while its last create-update did not send outstandingAmount.
   */
  addPayment(p: NewPayment, today: string): PaymentRec {
    const invoice = this.invoices.get(p.invoiceUuid.toLowerCase());
    if (!invoice) throw notFound('Invoice');
    const rec: PaymentRec = {
      uuid: randomUUID(),
      invoice,
      amount: p.amount,
      date: p.date,
      reference: p.reference ?? null,
      notes: p.notes ?? null,
      paymentType: p.paymentType ?? 'PAYMENT',
    };
    this.payments.set(rec.uuid, rec);
    this.paymentList.push(rec);
    invoice.payments.add(rec);
    this.refreshInvoice(invoice, today);
    return rec;
  }

  /** PUT /invoice/payment/{uuid}: the given fields replace the stored ones. */
  updatePayment(uuid: string, body: PaymentUpdateParsed, today: string): PaymentRec {
    const rec = this.payments.get(uuid.toLowerCase());
    if (!rec) throw notFound('Payment');
    if (body.amount !== undefined) rec.amount = body.amount;
    if (body.date !== undefined) rec.date = body.date;
    if (body.reference !== undefined) rec.reference = body.reference;
    if (body.notes !== undefined) rec.notes = body.notes;
    this.refreshInvoice(rec.invoice, today);
    return rec;
  }
}
