/**
 * A two-company Odoo database for the double, as an Odoo partner would find one at a client: a shared customer, each
 * company's own customers, an archived customer, a vendor; posted, paid, cancelled and draft invoices, a credit note,
 * a vendor bill; payments of one invoice, of none, and a refund paid out. Rows as the ORM answers them (`false` for
 * empty, many2one `[id, display_name]`, naive UTC datetimes).
 */
import { odooStamp, type FakeOdoo, type Row } from './fake-odoo.js';

export const T0 = Date.parse('2026-10-01T05:00:00Z');
const C1: [number, string] = [1, 'Riyadh Trading Co.'];
const C2: [number, string] = [2, 'Jeddah Branch'];
const SAR: [number, string] = [148, 'SAR'];
const at = (s: number): string => odooStamp(T0 + s * 1000);

export function partner(id: number, name: string, s: number, over: Row = {}): Row {
  return { id, name, display_name: name, is_company: true, parent_id: false, commercial_partner_id: [id, name], type: 'contact', active: true, email: false, phone: false, vat: false, street: false, street2: false, city: false, zip: false, country_id: [192, 'Saudi Arabia'], customer_rank: 1, supplier_rank: 0, company_id: false, write_date: at(s), ...over };
}

export function move(id: number, name: string, partnerRow: [number, string], s: number, over: Row = {}): Row {
  return { id, name, move_type: 'out_invoice', state: 'posted', partner_id: partnerRow, commercial_partner_id: partnerRow, invoice_date: '2026-09-20', invoice_date_due: '2026-10-20', amount_total: 1000, amount_residual: 1000, currency_id: SAR, ref: false, payment_state: 'not_paid', company_id: C1, write_date: at(s), ...over };
}

export function pay(id: number, name: string, amount: number, invoices: number[], s: number, over: Row = {}): Row {
  return { id, name, amount, date: '2026-09-25', state: 'paid', payment_type: 'inbound', partner_type: 'customer', partner_id: false, reconciled_invoice_ids: invoices, company_id: C1, write_date: at(s), ...over };
}

/** Fills the double; returns the partner ids by name for the assertions. */
export function twoCompanies(odoo: FakeOdoo): void {
  odoo.data['res.company'].push({ id: 1, name: C1[1], write_date: at(0) }, { id: 2, name: C2[1], write_date: at(0) });
  const faisal: [number, string] = [10, 'Al-Faisal Contracting'];
  const omar: [number, string] = [20, 'Omar Khalid'];
  const archived: [number, string] = [21, 'Najd Logistics'];
  const jeddah: [number, string] = [30, 'Red Sea Foods'];
  odoo.data['res.partner'].push(
    // Shared between the companies (company_id false): each company's tenant reads it.
    partner(10, faisal[1], 10, { email: 'ap@alfaisal.example', phone: '+966 11 465 0000', vat: '300123456700003', street: 'King Fahd Road', street2: 'Tower 2', city: 'Riyadh', zip: '12211' }),
    partner(11, 'Huda Saleh', 11, { is_company: false, parent_id: faisal, commercial_partner_id: faisal, type: 'invoice', email: 'huda@alfaisal.example' }),
    partner(12, 'Warehouse', 12, { is_company: false, parent_id: faisal, commercial_partner_id: faisal, type: 'delivery', street: 'Industrial City 2' }),
    // An individual, company 1's; no email, no phone: `false`, never pushed as "false".
    partner(20, omar[1], 20, { is_company: false, company_id: C1 }),
    // Archived: read all the same (reminders off).
    partner(21, archived[1], 21, { active: false, company_id: C1 }),
    partner(30, jeddah[1], 30, { company_id: C2, email: 'finance@redseafoods.example' }),
    // A vendor only: not a customer.
    partner(40, 'Gulf Paper Supplies', 40, { customer_rank: 0, supplier_rank: 3 }),
  );
  odoo.data['account.move'].push(
    move(100, 'INV/2026/00001', faisal, 100, { amount_residual: 500, payment_state: 'partial', ref: 'PO-7781' }),
    move(101, 'INV/2026/00002', omar, 101, { amount_total: 1200, amount_residual: 0, payment_state: 'paid' }),
    move(102, 'INV/2026/00003', faisal, 102, { state: 'cancel' }),
    move(103, '/', faisal, 103, { state: 'draft', invoice_date: false }),
    move(104, 'RINV/2026/00001', faisal, 104, { move_type: 'out_refund', amount_total: 200, amount_residual: 200 }),
    move(105, 'BILL/2026/09/0001', [40, 'Gulf Paper Supplies'], 105, { move_type: 'in_invoice' }),
    move(106, 'INV/2026/00004', archived, 106, { amount_residual: 300, amount_total: 300 }),
    move(200, 'INV/2026/00001', jeddah, 200, { company_id: C2, amount_total: 800, amount_residual: 600 }),
    move(201, 'INV/2026/00002', faisal, 201, { company_id: C2, amount_total: 400, amount_residual: 400 }),
  );
  odoo.data['account.payment'].push(
    pay(300, 'PBNK1/2026/00001', 500, [100], 300),
    pay(301, 'PBNK1/2026/00002', 1200, [101], 301),
    pay(302, 'PBNK1/2026/00003', 200, [], 302, { payment_type: 'outbound' }),
    pay(303, 'PBNK1/2026/00004', 150, [], 303),
    pay(400, 'PBNK2/2026/00001', 200, [200], 400, { company_id: C2 }),
  );
}
