/**
 * The parts of Zoho Books API v3 answers the adapter reads (https://www.zoho.com/books/api/v3/: contacts, invoices,
 * customer payments, organizations, pagination, errors). Loose objects: Zoho adds fields freely; every field read is
 * optional here, and the canonical record check (records.ts) decides what a record cannot do without.
 */
import { z } from 'zod';
import { optionalDecimal, optionalText } from '../wire.js';

const text = optionalText;
const money = optionalDecimal;
/** Zoho's ids are long digit strings; a number is read as its text (ids above 2^53 would already be mangled, so they must come as text). */
const id = z.union([z.string(), z.number().int()]).nullish().transform((v) => (v === null || v === undefined ? undefined : String(v).trim() || undefined));

/** The error body of every failed call: `{code, message}` (code 0 is success). */
export const zohoErrorSchema = z.looseObject({ code: z.number().int(), message: z.string().optional() });
export type ZohoError = z.infer<typeof zohoErrorSchema>;

export const pageContextSchema = z.looseObject({
  page: z.number().int().optional(),
  per_page: z.number().int().optional(),
  has_more_page: z.boolean().optional(),
});

export const zohoContactPersonSchema = z.looseObject({
  contact_person_id: id,
  first_name: text,
  last_name: text,
  email: text,
  phone: text,
  mobile: text,
  is_primary_contact: z.boolean().nullish(),
});

export const zohoContactSchema = z.looseObject({
  contact_id: id,
  contact_name: text,
  company_name: text,
  /** `customer` or `vendor`. */
  contact_type: text,
  /** `active` or `inactive`. */
  status: text,
  first_name: text,
  last_name: text,
  email: text,
  phone: text,
  mobile: text,
  language_code: text,
  outstanding_receivable_amount: money,
  last_modified_time: text,
  /** Only in a contact's detail (`GET /contacts/{id}`). */
  contact_persons: z.array(zohoContactPersonSchema).nullish(),
});

export const zohoInvoiceSchema = z.looseObject({
  invoice_id: id,
  invoice_number: text,
  customer_id: id,
  status: text,
  date: text,
  due_date: text,
  total: money,
  balance: money,
  currency_code: text,
  reference_number: text,
  last_modified_time: text,
});

export const zohoPaymentSchema = z.looseObject({
  payment_id: id,
  payment_number: text,
  customer_id: id,
  date: text,
  amount: money,
  reference_number: text,
  last_modified_time: text,
  /** Only in a payment's detail (`GET /customerpayments/{id}`): the invoices it is applied to. */
  invoices: z.array(z.looseObject({ invoice_id: id, amount_applied: money })).nullish(),
});

export type ZohoContact = z.infer<typeof zohoContactSchema>;
export type ZohoInvoice = z.infer<typeof zohoInvoiceSchema>;
export type ZohoPayment = z.infer<typeof zohoPaymentSchema>;

/** Each entity's endpoint, the array of its listing and the object of its detail. */
export const ZOHO_ENTITY = {
  contacts: { path: 'contacts', list: 'contacts', one: 'contact' },
  invoices: { path: 'invoices', list: 'invoices', one: 'invoice' },
  payments: { path: 'customerpayments', list: 'customerpayments', one: 'payment' },
} as const;

const itemsSchema = z.array(z.unknown());

/** A listing answer: the entity's array (its items are checked one by one later) and `page_context`. */
export function parseListing(body: unknown, key: string): { ok: true; items: unknown[]; hasMore: boolean | undefined } | { ok: false; reason: string } {
  if (body === null || typeof body !== 'object') return { ok: false, reason: 'the answer is not a JSON object' };
  const items = itemsSchema.safeParse((body as Record<string, unknown>)[key]);
  if (!items.success) return { ok: false, reason: `the answer has no ${key} array` };
  const context = pageContextSchema.safeParse((body as Record<string, unknown>)['page_context']);
  return { ok: true, items: items.data, hasMore: context.success ? context.data.has_more_page : undefined };
}

/** A detail answer's object (`{"invoice": {...}}`), unchecked. */
export function parseDetail(body: unknown, key: string): unknown {
  return body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;
}
