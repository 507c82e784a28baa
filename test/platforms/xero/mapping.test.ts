import { describe, expect, it } from 'vitest';
import { ifModifiedSince, mapXeroItem, parseXeroDate, xeroDate, xeroTimestamp, type ItemOutcome } from '../../../src/platforms/xero/index.js';
import type { Entity } from '../../../src/glossary.js';
import { examples, type XeroObject } from './fixtures.js';

const TENANT = 'b1f7a9c2-2f3e-4b8a-9f0e-5d2c1a7e3b40';

function record<E extends Entity>(outcome: ItemOutcome<E>): Record<string, unknown> {
  if (outcome.kind !== 'record') throw new Error(`expected a record, got ${outcome.kind}: ${'reason' in outcome ? outcome.reason : ''}`);
  return outcome.record;
}

describe('Xero dates', () => {
  it('reads /Date(ms+zzzz)/ with and without an offset', () => {
    expect(parseXeroDate('/Date(1539993600000+0000)/')).toEqual({ ms: 1539993600000, offsetMinutes: 0, localDate: '2018-10-20' });
    expect(xeroTimestamp('/Date(1573755038314)/')).toBe('2019-11-14T18:10:38.314Z');
    // The calendar date is the one written in its own zone: 12:00 UTC on the 19th is the 20th at +13:00.
    expect(xeroDate('/Date(1539950400000+1300)/')).toBe('2018-10-20');
    expect(xeroDate('/Date(1539950400000-0500)/')).toBe('2018-10-19');
    expect(xeroTimestamp('/Date(1539950400000+1300)/')).toBe('2018-10-19T12:00:00.000Z');
  });

  it('reads ISO strings with an offset, with Z, and without an offset as UTC', () => {
    expect(xeroTimestamp('2019-02-21T16:29:47.96-08:00')).toBe('2019-02-22T00:29:47.960Z');
    expect(xeroDate('2019-02-21T16:29:47.96-08:00')).toBe('2019-02-21');
    expect(xeroTimestamp('2017-08-14T01:18:26.74')).toBe('2017-08-14T01:18:26.740Z');
    expect(xeroTimestamp('2018-11-02T16:31:30Z')).toBe('2018-11-02T16:31:30.000Z');
    expect(xeroDate('2018-10-20T00:00:00')).toBe('2018-10-20');
    expect(xeroDate('2018-10-20')).toBe('2018-10-20');
  });

  it('refuses what is not a date', () => {
    for (const bad of ['/Date(abc)/', '2019-02-30T00:00:00', '2019-13-01', 'yesterday', '', '/Date(1539993600000+0000)']) {
      expect(parseXeroDate(bad), bad).toBeUndefined();
    }
    expect(parseXeroDate(1539993600000)).toBeUndefined();
  });

  it('writes If-Modified-Since in UTC at second precision, rounded down', () => {
    expect(ifModifiedSince(Date.parse('2020-02-06T12:17:43.999Z'))).toBe('2020-02-06T12:17:43Z');
    expect(ifModifiedSince(Date.parse('2020-02-06T12:17:43.000-08:00'))).toBe('2020-02-06T20:17:43Z');
  });
});

describe('Xero contacts -> canonical contacts', () => {
  it('maps every field of the specification example with persons, phones and addresses', () => {
    const c = record(mapXeroItem('contacts', examples.contact(), TENANT));
    expect(c).toEqual({
      id: '8138a266-fb42-49b2-a104-014b7045753d',
      companyId: TENANT,
      updatedAt: '2019-03-01T17:02:57.193Z',
      deleted: false,
      name: 'Acme Parts Co.',
      firstName: 'Blake',
      lastName: 'Kohler',
      email: 'bk@krave.co',
      // MOBILE first, even though DDI and DEFAULT come before it: +<country> <area> <number>.
      phoneNumber: '+3 234 999-44',
      vatNumber: '123-22-3456',
      otherId: 'SB2',
      accountNumber: '12334567',
      // The STREET address (it has content) wins over the PO box; an empty Country is absent.
      street: '123 Fake Street',
      city: 'Vancouver',
      postalCode: 'V6B 2T4',
      persons: [{ name: 'Sue Johnson', firstName: 'Sue', lastName: 'Johnson', email: 'sue.johnson@krave.com' }],
      // IsCustomer (Xero sets it once a receivable invoice is entered against the contact).
      customer: true,
    });
  });

  it('says which contacts are customers: IsCustomer, whatever IsSupplier says; unknown when Xero does not say', () => {
    const [, lisa] = examples.contacts(); // the specification's example: neither supplier nor customer
    expect(record(mapXeroItem('contacts', lisa, TENANT))['customer']).toBe(false);
    const supplier = { ...examples.contact(), IsSupplier: true, IsCustomer: false };
    expect(record(mapXeroItem('contacts', supplier, TENANT))['customer']).toBe(false);
    const both = { ...examples.contact(), IsSupplier: true, IsCustomer: true };
    expect(record(mapXeroItem('contacts', both, TENANT))['customer']).toBe(true);
    const unsaid = examples.contact();
    delete unsaid['IsCustomer'];
    expect(record(mapXeroItem('contacts', unsaid, TENANT))).not.toHaveProperty('customer');
  });

  it('falls back to the default phone and the PO box, and leaves empty strings out', () => {
    const [katherine] = examples.contacts();
    const c = record(mapXeroItem('contacts', katherine, TENANT));
    expect(c['phoneNumber']).toBe('(626) 847-1294');
    expect(c['city']).toBe('Palo Alto');
    expect(c['postalCode']).toBe('94020');
    expect(c['country']).toBe('United States');
    expect(c['street']).toBeUndefined();
    expect(c['vatNumber']).toBeUndefined();
    expect(c['persons']).toEqual([]);
    expect(c['updatedAt']).toBe('2017-08-21T20:49:04.227Z');
  });

  it('drops the trunk 0 of an area code after a country code, keeps a full +number, never picks a fax', () => {
    const c = examples.contact();
    c['Phones'] = [
      { PhoneType: 'FAX', PhoneNumber: '111 1111', PhoneAreaCode: '11', PhoneCountryCode: '966' },
      { PhoneType: 'MOBILE', PhoneNumber: '', PhoneAreaCode: '', PhoneCountryCode: '' },
      { PhoneType: 'DEFAULT', PhoneNumber: '4651234', PhoneAreaCode: '011', PhoneCountryCode: '+966' },
    ];
    expect(record(mapXeroItem('contacts', c, TENANT))['phoneNumber']).toBe('+966 11 4651234');
    c['Phones'] = [{ PhoneType: 'MOBILE', PhoneNumber: '+966 50 123 4567', PhoneAreaCode: '99', PhoneCountryCode: '1' }];
    expect(record(mapXeroItem('contacts', c, TENANT))['phoneNumber']).toBe('+966 50 123 4567');
    c['Phones'] = [{ PhoneType: 'FAX', PhoneNumber: '123-9933', PhoneAreaCode: '123', PhoneCountryCode: '2' }];
    expect(record(mapXeroItem('contacts', c, TENANT))['phoneNumber']).toBeUndefined();
  });

  it('joins all address lines of the chosen address', () => {
    const c = examples.contact();
    c['Addresses'] = [{ AddressType: 'STREET', AddressLine1: 'Building 12', AddressLine2: 'King Fahd Rd', AddressLine3: '', AddressLine4: 'Olaya', City: 'Riyadh', Country: 'Saudi Arabia', PostalCode: '12211' }];
    const r = record(mapXeroItem('contacts', c, TENANT));
    expect(r['street']).toBe('Building 12, King Fahd Rd, Olaya');
    expect(r['country']).toBe('Saudi Arabia');
  });

  it('treats ARCHIVED (and GDPRREQUEST) as deleted', () => {
    for (const status of ['ARCHIVED', 'GDPRREQUEST']) {
      const c = examples.contact();
      c['ContactStatus'] = status;
      expect(record(mapXeroItem('contacts', c, TENANT))['deleted'], status).toBe(true);
    }
  });

  it('turns a contact without a name or with an unreadable stamp into a bad record with its id', () => {
    const noName = examples.contact();
    delete noName['Name'];
    expect(mapXeroItem('contacts', noName, TENANT)).toMatchObject({ kind: 'bad', platformId: '8138a266-fb42-49b2-a104-014b7045753d', reason: 'name: required' });
    const badDate = examples.contact();
    badDate['UpdatedDateUTC'] = '/Date(soon)/';
    const out = mapXeroItem('contacts', badDate, TENANT);
    expect(out.kind).toBe('bad');
    expect(out.kind === 'bad' && out.reason).toMatch(/^updatedAt: /);
    const badShape = examples.contact();
    badShape['Phones'] = 'not a list';
    expect(mapXeroItem('contacts', badShape, TENANT)).toMatchObject({ kind: 'bad', reason: expect.stringMatching(/^Phones: /) as unknown });
  });
});

describe('Xero invoices -> canonical invoices', () => {
  const [voided, paid, authorised] = examples.invoices() as [XeroObject, XeroObject, XeroObject];

  it('maps the specification examples: status, dates, totals, outstanding, currency, reference', () => {
    expect(record(mapXeroItem('invoices', voided, TENANT))).toEqual({
      id: 'd4956132-ed94-4dd7-9eaa-aa22dfdf06f2',
      contactId: 'a3675fc4-f8dd-4f03-ba5b-f1870566bcd7',
      updatedAt: '2018-11-02T16:31:30.160Z',
      status: 'VOIDED',
      deleted: false,
      number: 'INV-0001',
      date: '2018-10-20',
      dueDate: '2018-12-30',
      total: 40,
      outstandingAmount: 0,
      currencyCode: 'NZD',
      reference: 'Red Fish, Blue Fish',
    });
    expect(record(mapXeroItem('invoices', paid, TENANT))).toMatchObject({ status: 'PAID', total: 46, outstandingAmount: 0, number: 'INV-0002' });
    const a = record(mapXeroItem('invoices', authorised, TENANT));
    expect(a).toMatchObject({ status: 'AUTHORISED', total: 115, outstandingAmount: 115, date: '2018-11-02', dueDate: '2018-11-07', updatedAt: '2018-11-02T16:37:28.927Z' });
    expect(a['reference']).toBeUndefined();
  });

  it('maps DRAFT and SUBMITTED to DRAFT, DELETED to a deleted DRAFT', () => {
    const status = (s: string, extra: XeroObject = {}) => record(mapXeroItem('invoices', { ...authorised, Status: s, ...extra }, TENANT));
    expect(status('DRAFT')).toMatchObject({ status: 'DRAFT', deleted: false });
    expect(status('SUBMITTED')).toMatchObject({ status: 'DRAFT', deleted: false });
    expect(status('DELETED')).toMatchObject({ status: 'DRAFT', deleted: true });
    // A draft without a number or due date is still a record (it is never pushed).
    const draft = status('DRAFT', { InvoiceNumber: '', DueDate: null, DueDateString: null });
    expect(draft['number']).toBe(authorised['InvoiceID']);
    expect(draft['dueDate']).toBe('2018-11-02');
    expect(mapXeroItem('invoices', { ...authorised, Status: 'PENDING' }, TENANT)).toMatchObject({ kind: 'bad', reason: expect.stringMatching(/^status: /) as unknown });
  });

  it('reads DateString when Date is absent, and ISO stamps', () => {
    const r = record(mapXeroItem('invoices', { ...authorised, Date: undefined, DueDate: undefined, UpdatedDateUTC: '2019-02-21T16:29:47.96-08:00' }, TENANT));
    expect(r).toMatchObject({ date: '2018-11-02', dueDate: '2018-11-07', updatedAt: '2019-02-22T00:29:47.960Z' });
  });

  it('skips bills and credit notes, and reports an invoice without a contact', () => {
    expect(mapXeroItem('invoices', { ...authorised, Type: 'ACCPAY' }, TENANT).kind).toBe('skip');
    expect(mapXeroItem('invoices', { ...authorised, Type: 'ACCRECCREDIT' }, TENANT).kind).toBe('skip');
    expect(mapXeroItem('invoices', { ...authorised, Contact: {} }, TENANT)).toMatchObject({ kind: 'bad', platformId: authorised['InvoiceID'], reason: 'contactId: required' });
    expect(mapXeroItem('invoices', { ...authorised, AmountDue: 500 }, TENANT)).toMatchObject({ kind: 'bad', reason: expect.stringMatching(/^outstandingAmount: /) as unknown });
  });

  it('maps the single-invoice example (paid in full, with a validation error flag)', () => {
    expect(record(mapXeroItem('invoices', examples.invoice(), TENANT))).toMatchObject({ id: 'a03ffcd2-5d91-4c7e-b483-318584e9e439', number: 'INV-0006', status: 'PAID', total: 148062.76, reference: 'Tour', date: '2019-03-07', dueDate: '2019-03-13' });
  });
});

describe('Xero payments -> canonical payments', () => {
  it('maps a receivable payment: invoice, amount, date; no paymentUuid', () => {
    const [p] = examples.payments();
    expect(record(mapXeroItem('payments', p, TENANT))).toEqual({
      id: '99ea7f6b-c513-4066-bc27-b7c65dcd76c2',
      invoiceId: '046d8a6d-1ae1-4b4d-9340-5601bdf41b87',
      updatedAt: '2018-11-02T16:36:32.690Z',
      amount: 46,
      date: '2018-11-29',
      deleted: false,
    });
  });

  it('skips payments on credit notes and bills; DELETED is a deletion', () => {
    const [, credit] = examples.payments();
    expect(mapXeroItem('payments', credit, TENANT).kind).toBe('skip');
    const deleted = examples.deletedPayment();
    expect(mapXeroItem('payments', deleted, TENANT).kind).toBe('skip');
    const receivable = { ...deleted, PaymentType: 'ACCRECPAYMENT', Invoice: { Type: 'ACCREC', InvoiceID: 'dba68ebc-c05a-4e2d-b97d-964349e5b8d6' } };
    expect(record(mapXeroItem('payments', receivable, TENANT))).toMatchObject({ deleted: true, reference: 'foobar', amount: 2, date: '2019-09-02', updatedAt: '2020-03-11T16:57:32.373Z' });
  });

  it('reports a payment without an invoice or with a zero amount', () => {
    const [p] = examples.payments() as [XeroObject];
    expect(mapXeroItem('payments', { ...p, Invoice: { Type: 'ACCREC' } }, TENANT)).toMatchObject({ kind: 'bad', reason: 'invoiceId: required' });
    expect(mapXeroItem('payments', { ...p, Amount: 0 }, TENANT)).toMatchObject({ kind: 'bad', reason: expect.stringMatching(/^amount: /) as unknown });
  });
});
