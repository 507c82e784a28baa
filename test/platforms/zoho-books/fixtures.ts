/** Zoho Books records for the double, built from the samples in test/fixtures/zoho-books (README.md there says whence). */
import { readFileSync } from 'node:fs';
import { zohoStamp, type ZohoObject } from './fake-zoho.js';

const sample = (name: string): ZohoObject => JSON.parse(readFileSync(new URL(`../../fixtures/zoho-books/${name}.json`, import.meta.url), 'utf8')) as ZohoObject;
export const SAMPLES = { contact: sample('contact'), invoice: sample('invoice'), payment: sample('customerpayment'), errors: sample('errors') };

export function contact(id: string, atMs: number, over: ZohoObject = {}): ZohoObject {
  return { ...SAMPLES.contact, contact_id: id, contact_name: `Customer ${id}`, last_modified_time: zohoStamp(atMs), ...over };
}

export function invoice(id: string, customerId: string, atMs: number, over: ZohoObject = {}): ZohoObject {
  return { ...SAMPLES.invoice, invoice_id: id, invoice_number: `INV-${id}`, customer_id: customerId, status: 'sent', total: 1000, balance: 1000, last_modified_time: zohoStamp(atMs), ...over };
}

export function payment(id: string, customerId: string, atMs: number, lines: Record<string, number>, over: ZohoObject = {}): ZohoObject {
  const invoices = Object.entries(lines).map(([invoice_id, amount_applied]) => ({ invoice_id, invoice_number: `INV-${invoice_id}`, amount_applied }));
  return { ...SAMPLES.payment, payment_id: id, customer_id: customerId, amount: Object.values(lines).reduce((a, b) => a + b, 0), invoices, last_modified_time: zohoStamp(atMs), ...over };
}
