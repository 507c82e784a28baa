/**
 * The Xero specification's own example bodies (test/fixtures/xero, copied from xero_accounting.yaml) loaded with
 * the YAML core schema, so timestamps stay the strings Xero sends; and builders of larger data sets made of them.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export type XeroObject = Record<string, unknown>;

const DIR = new URL('../../fixtures/xero/', import.meta.url);

export function loadYaml(name: string): unknown {
  return parse(readFileSync(new URL(name, DIR), 'utf8'), { schema: 'core' });
}

function example(name: string): XeroObject {
  return (loadYaml(name) as { example: XeroObject }).example;
}

const clone = <T>(v: T): T => structuredClone(v);

/** Every example item of each listing, fresh copies. */
export const examples = {
  contactsResponse: () => example('get-contacts.yaml'),
  contacts: () => clone(example('get-contacts.yaml')['Contacts'] as XeroObject[]),
  contact: () => clone((example('get-contact.yaml')['Contacts'] as XeroObject[])[0]!),
  invoicesResponse: () => example('get-invoices.yaml'),
  invoices: () => clone(example('get-invoices.yaml')['Invoices'] as XeroObject[]),
  invoice: () => clone((example('get-invoice.yaml')['Invoices'] as XeroObject[])[0]!),
  payments: () => clone(example('get-payments.yaml')['Payments'] as XeroObject[]),
  deletedPayment: () => clone((example('delete-payment.yaml')['Payments'] as XeroObject[])[0]!),
};

export interface ParameterSpec {
  in: 'query' | 'header' | 'path';
  name: string;
  required?: boolean;
  schema?: { type?: string; format?: string; items?: { type?: string } };
}

/** The GET parameters of /Contacts, /Invoices, /Payments from the specification, `$ref`s resolved. */
export function specParameters(): Record<string, ParameterSpec[]> {
  const raw = loadYaml('parameters.yaml') as Record<string, unknown>;
  const components = raw['components'] as Record<string, ParameterSpec>;
  const resolve = (p: unknown): ParameterSpec => {
    const ref = (p as { $ref?: string }).$ref;
    if (ref === undefined) return p as ParameterSpec;
    const name = ref.replace('#/components/parameters/', '');
    const found = components[name];
    if (!found) throw new Error(`unresolved ${ref}`);
    return found;
  };
  const out: Record<string, ParameterSpec[]> = {};
  for (const path of ['/Contacts', '/Invoices', '/Payments']) {
    const op = raw[path] as { pathParameters: unknown[]; parameters: unknown[] };
    out[path] = [...op.pathParameters, ...op.parameters].map(resolve);
  }
  return out;
}

/** A deterministic UUID-shaped id. */
export function fakeId(kind: number, i: number): string {
  const hex = i.toString(16).padStart(12, '0');
  return `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${hex}`;
}

export const msDate = (ms: number): string => `/Date(${ms}+0000)/`;

export interface BuildOptions {
  /** UpdatedDateUTC of the first item; each next one is `stepMs` later. */
  startMs: number;
  stepMs?: number;
}

/** `n` contacts cloned round-robin from the specification's examples, with their own ids, names and stamps. */
export function buildContacts(n: number, o: BuildOptions): XeroObject[] {
  const base = [...examples.contacts(), examples.contact()];
  return Array.from({ length: n }, (_, i) => {
    const c = clone(base[i % base.length]!);
    c['ContactID'] = fakeId(1, i);
    c['Name'] = `${String(c['Name'])} ${i}`;
    c['UpdatedDateUTC'] = msDate(o.startMs + i * (o.stepMs ?? 1000));
    delete c['Attachments'];
    return c;
  });
}

/**
 * Invoices cloned round-robin from the examples (VOIDED, PAID, AUTHORISED, PAID), `perContact` per contact, with
 * their own ids and numbers; plus, every fourth, a bill (ACCPAY) that the adapter must skip. A contact given a
 * receivable invoice is flagged `IsCustomer`, as Xero does (a bill flags `IsSupplier`).
 */
export function buildInvoices(contacts: readonly XeroObject[], perContact: number, o: BuildOptions): XeroObject[] {
  const base = [...examples.invoices(), examples.invoice()];
  const out: XeroObject[] = [];
  let i = 0;
  for (const contact of contacts) {
    for (let k = 0; k < perContact; k++, i++) {
      const inv = clone(base[i % base.length]!);
      inv['InvoiceID'] = fakeId(2, i);
      inv['InvoiceNumber'] = `INV-${String(i).padStart(5, '0')}`;
      inv['Contact'] = { ContactID: contact['ContactID'], Name: contact['Name'] };
      inv['UpdatedDateUTC'] = msDate(o.startMs + i * (o.stepMs ?? 1000));
      if (i % 4 === 3) inv['Type'] = 'ACCPAY';
      contact[inv['Type'] === 'ACCREC' ? 'IsCustomer' : 'IsSupplier'] = true;
      delete inv['Attachments'];
      out.push(inv);
    }
  }
  return out;
}

/** One payment per PAID receivable invoice, cloned from the first payment example. */
export function buildPayments(invoices: readonly XeroObject[], o: BuildOptions): XeroObject[] {
  const base = examples.payments()[0]!;
  return invoices
    .filter((inv) => inv['Type'] === 'ACCREC' && inv['Status'] === 'PAID')
    .map((inv, i) => {
      const p = clone(base);
      p['PaymentID'] = fakeId(3, i);
      p['Amount'] = inv['Total'];
      p['BankAmount'] = inv['Total'];
      p['Invoice'] = { Type: 'ACCREC', InvoiceID: inv['InvoiceID'], InvoiceNumber: inv['InvoiceNumber'] };
      p['UpdatedDateUTC'] = msDate(o.startMs + i * (o.stepMs ?? 1000));
      return p;
    });
}
