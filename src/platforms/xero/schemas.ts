/**
 * The parts of Xero's Accounting API responses the adapter reads (xero_accounting.yaml: Contacts, Invoices,
 * Payments, Pagination). Loose objects: Xero adds fields freely; every field we read is optional here, and the
 * canonical record check (records.ts) decides what a record cannot do without.
 */
import { z } from 'zod';
import { optionalDecimal, optionalText } from '../wire.js';

const text = optionalText;
/** Xero sends money as JSON numbers, and in a few places as strings (`TotalAmount: "50.00"`). */
const money = optionalDecimal;

/** A date in any of Xero's forms; parsed by dates.ts. */
const dateText = z.string().nullish().transform((v) => v ?? undefined);

export const xeroPhoneSchema = z.looseObject({
  PhoneType: text,
  PhoneNumber: text,
  PhoneAreaCode: text,
  PhoneCountryCode: text,
});

export const xeroAddressSchema = z.looseObject({
  AddressType: text,
  AddressLine1: text,
  AddressLine2: text,
  AddressLine3: text,
  AddressLine4: text,
  City: text,
  Region: text,
  PostalCode: text,
  Country: text,
  AttentionTo: text,
});

export const xeroContactPersonSchema = z.looseObject({
  FirstName: text,
  LastName: text,
  EmailAddress: text,
});

export const xeroContactSchema = z.looseObject({
  ContactID: text,
  ContactNumber: text,
  ContactStatus: text,
  Name: text,
  FirstName: text,
  LastName: text,
  EmailAddress: text,
  BankAccountDetails: text,
  TaxNumber: text,
  Addresses: z.array(xeroAddressSchema).nullish(),
  Phones: z.array(xeroPhoneSchema).nullish(),
  ContactPersons: z.array(xeroContactPersonSchema).nullish(),
  /** Set by Xero once a receivable (ACCREC) invoice is entered against the contact; IsSupplier, for payables. */
  IsCustomer: z.boolean().nullish(),
  IsSupplier: z.boolean().nullish(),
  UpdatedDateUTC: dateText,
});

export const xeroInvoiceSchema = z.looseObject({
  Type: text,
  InvoiceID: text,
  InvoiceNumber: text,
  Reference: text,
  Contact: z.looseObject({ ContactID: text }).nullish(),
  Date: dateText,
  DateString: dateText,
  DueDate: dateText,
  DueDateString: dateText,
  Status: text,
  Total: money,
  AmountDue: money,
  CurrencyCode: text,
  UpdatedDateUTC: dateText,
});

export const xeroPaymentSchema = z.looseObject({
  PaymentID: text,
  PaymentType: text,
  Status: text,
  Date: dateText,
  Amount: money,
  Reference: text,
  Invoice: z.looseObject({ InvoiceID: text, Type: text }).nullish(),
  UpdatedDateUTC: dateText,
});

export const paginationSchema = z.looseObject({
  page: z.number().int().optional(),
  pageSize: z.number().int().optional(),
  pageCount: z.number().int().optional(),
  itemCount: z.number().int().optional(),
});

export type XeroContact = z.infer<typeof xeroContactSchema>;
export type XeroInvoice = z.infer<typeof xeroInvoiceSchema>;
export type XeroPayment = z.infer<typeof xeroPaymentSchema>;
export type XeroPhone = z.infer<typeof xeroPhoneSchema>;
export type XeroAddress = z.infer<typeof xeroAddressSchema>;

/** Xero's name of each entity's endpoint and of the array in its response. */
export const XERO_COLLECTION = { contacts: 'Contacts', invoices: 'Invoices', payments: 'Payments' } as const;

const envelopeSchema = z.looseObject({ pagination: paginationSchema.nullish() });
const itemsSchema = z.array(z.unknown());

export interface Listing {
  items: unknown[];
  pagination: z.infer<typeof paginationSchema> | undefined;
}

/** A listing response: the entity's array (its items are checked one by one later) and the pagination block. */
export function parseListing(body: unknown, key: string): { ok: true; listing: Listing } | { ok: false; reason: string } {
  const envelope = envelopeSchema.safeParse(body);
  if (!envelope.success) return { ok: false, reason: 'the response is not a JSON object with a valid pagination block' };
  const items = itemsSchema.safeParse((envelope.data as Record<string, unknown>)[key]);
  if (!items.success) return { ok: false, reason: `the response has no ${key} array` };
  return { ok: true, listing: { items: items.data, pagination: envelope.data.pagination ?? undefined } };
}
