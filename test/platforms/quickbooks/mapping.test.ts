import { describe, expect, it } from 'vitest';
import { mapQboItem, qboMs } from '../../../src/platforms/quickbooks/index.js';
import { customer, invoice } from './fixtures.js';

const REALM = '9130346988751236';
const meta = { MetaData: { CreateTime: '2026-02-01T09:00:00-08:00', LastUpdatedTime: '2026-03-01T10:33:39-08:00' } };

describe('QuickBooks mapping', () => {
  it('stamps are read with their offset and written in UTC', () => {
    const out = mapQboItem('contacts', { ...customer('5'), ...meta }, REALM);
    expect(out.kind === 'records' && out.records[0]?.updatedAt).toBe('2026-03-01T18:33:39.000Z');
    expect(qboMs('2026-03-01T10:33:39')).toBeUndefined(); // no offset: not a QuickBooks stamp
  });

  it('contacts: first of several emails, mobile before the primary phone, a job by its full name, AcctNum as otherId', () => {
    const out = mapQboItem('contacts', { ...customer('5', { PrimaryEmailAddr: { Address: 'a@x.com, b@y.com' }, Mobile: { FreeFormNumber: '+966500000005' }, Job: true, ParentRef: { value: '1' }, FullyQualifiedName: 'Acme:Roof', DisplayName: 'Roof', AcctNum: 'A-5' }), ...meta }, REALM);
    expect(out.kind).toBe('records');
    if (out.kind !== 'records') return;
    expect(out.records[0]).toMatchObject({ id: '5', name: 'Acme:Roof', email: 'a@x.com', phoneNumber: '+966500000005', otherId: 'A-5', companyId: REALM });
  });

  it('invoices: Balance is outstanding; 0 is PAID; a void is VOIDED; no DueDate means due on TxnDate; no DocNumber means its Id', () => {
    const map = (fields: Record<string, unknown>) => {
      const out = mapQboItem('invoices', { ...invoice('77', '5', fields), ...meta }, REALM);
      if (out.kind !== 'records') throw new Error(out.reason);
      return out.records[0]!;
    };
    expect(map({ TotalAmt: 200, Balance: 80 })).toMatchObject({ status: 'AUTHORISED', total: 200, outstandingAmount: 80 });
    expect(map({ TotalAmt: 200, Balance: 0 })).toMatchObject({ status: 'PAID', outstandingAmount: 0 });
    expect(map({ TotalAmt: 0, Balance: 0, PrivateNote: 'Voided' })).toMatchObject({ status: 'VOIDED' });
    expect(map({ DueDate: undefined, DocNumber: undefined })).toMatchObject({ dueDate: '2026-02-01', number: '77' });
    expect(map({ CurrencyRef: { value: 'sar' } }).currencyCode).toBe('SAR');
  });

  it('payments: one record per invoice line; credit-memo lines are not invoice payments; a line linking two invoices is bad', () => {
    const payment = (lines: unknown[]) => mapQboItem('payments', { Id: '9', TxnDate: '2026-03-02', TotalAmt: 60, PaymentRefNum: 'CHK-1', Line: lines, ...meta }, REALM);
    const ok = payment([
      { Amount: 50, LinkedTxn: [{ TxnId: '1', TxnType: 'Invoice' }] },
      { Amount: 10, LinkedTxn: [{ TxnId: '2', TxnType: 'Invoice' }] },
      { Amount: 30, LinkedTxn: [{ TxnId: '3', TxnType: 'CreditMemo' }] },
    ]);
    expect(ok.kind === 'records' && ok.records.map((r) => [r.id, r.invoiceId, r.amount, r.date, r.reference])).toEqual([
      ['9:1', '1', 50, '2026-03-02', 'CHK-1'],
      ['9:2', '2', 10, '2026-03-02', 'CHK-1'],
    ]);
    const bad = payment([{ Amount: 50, LinkedTxn: [{ TxnId: '1', TxnType: 'Invoice' }, { TxnId: '2', TxnType: 'Invoice' }] }]);
    expect(bad).toMatchObject({ kind: 'bad', platformId: '9', reason: expect.stringContaining('Line[0]: links 2 invoices') as unknown });
  });

  it('a record without a readable stamp or a required field is bad, with the field named and never its value', () => {
    const noStamp = mapQboItem('invoices', { ...invoice('78', '5'), MetaData: { LastUpdatedTime: 'soon' } }, REALM);
    expect(noStamp).toMatchObject({ kind: 'bad', platformId: '78', reason: expect.stringContaining('updatedAt') as unknown });
    const negative = mapQboItem('invoices', { ...invoice('79', '5', { TotalAmt: -5, Balance: -5 }), ...meta }, REALM);
    expect(negative).toMatchObject({ kind: 'bad', platformId: '79' });
    expect(negative.kind === 'bad' && negative.reason).not.toContain('-5');
  });
});
