/** QuickBooks entities for the tests, shaped as the schemas' Customer, Invoice and Payment (JSON). */
import type { QboDouble, QboObject } from './double.js';

export function customer(id: string, fields: QboObject = {}): QboObject {
  return {
    Id: id,
    DisplayName: `Customer ${id}`,
    FullyQualifiedName: `Customer ${id}`,
    GivenName: 'Amal',
    FamilyName: `Family${id}`,
    CompanyName: `Company ${id} LLC`,
    PrimaryEmailAddr: { Address: `billing${id}@example.com` },
    PrimaryPhone: { FreeFormNumber: `(555) 010-${id.padStart(4, '0').slice(-4)}` },
    BillAddr: { Id: `${id}0`, Line1: `${id} Main Street`, Line2: 'Suite 4', City: 'Riyadh', PostalCode: '12211', Country: 'SA', CountrySubDivisionCode: 'RD' },
    Active: true,
    Job: false,
    BillWithParent: false,
    Balance: 0,
    ...fields,
  };
}

export function invoice(id: string, customerId: string, fields: QboObject = {}): QboObject {
  const total = (fields['TotalAmt'] as number | undefined) ?? 100 + Number(id) % 50;
  return {
    Id: id,
    DocNumber: `INV-${id}`,
    TxnDate: '2026-02-01',
    DueDate: '2026-03-01',
    TotalAmt: total,
    Balance: total,
    CurrencyRef: { value: 'USD', name: 'United States Dollar' },
    CustomerRef: { value: customerId },
    Line: [{ Amount: total, DetailType: 'SalesItemLineDetail', SalesItemLineDetail: { ItemRef: { value: '1', name: 'Services' } } }],
    ...fields,
  };
}

/** `n` customers and two invoices each, stamped one second apart from `startMs`. */
export function seed(double: QboDouble, n: number, startMs: number): { customers: string[]; invoices: string[] } {
  const customers: string[] = [];
  const invoices: string[] = [];
  let t = startMs;
  for (let i = 1; i <= n; i++) {
    const cid = String(i);
    double.put('Customer', customer(cid), (t += 1000));
    customers.push(cid);
  }
  for (const cid of customers) {
    for (let k = 0; k < 2; k++) {
      const id = String(1000 + Number(cid) * 2 + k);
      double.put('Invoice', invoice(id, cid), (t += 1000));
      invoices.push(id);
    }
  }
  return { customers, invoices };
}
