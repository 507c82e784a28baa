import { describe, expect, it } from 'vitest';
import { invoiceUpsertSchema, type InvoiceUpsert } from '../../src/collections/schemas.js';
import { mapInvoice, mapPayment, type InvoiceMapperResult } from '../../src/mapping/index.js';
import { invoiceRecordSchema, paymentRecordSchema, type InvoiceRecord } from '../../src/platforms/records.js';

const CONTACT = '3f1c2a4e-8b7d-4c61-9a0e-5d2f6b8c9e01';
const INVOICE = '7a9e3c1b-2d4f-4e6a-8b0c-1d2e3f4a5b6c';

const rec = (over: Record<string, unknown> = {}): InvoiceRecord =>
  invoiceRecordSchema.parse({
    id: 'INV-1', contactId: 'C-1', updatedAt: '2026-01-01T00:00:00Z', status: 'AUTHORISED',
    number: 'INV-0001', date: '2026-01-01', dueDate: '2026-01-31', total: 1000, ...over,
  });

function pushed(m: InvoiceMapperResult): InvoiceUpsert {
  if (m.kind !== 'push') throw new Error(`expected push, got ${JSON.stringify(m)}`);
  expect(invoiceUpsertSchema.safeParse(m.body).success).toBe(true);
  return m.body;
}

describe('mapInvoice', () => {
  it('maps an authorised invoice with its fields, extPlatformId and the known uuid, without currencyCode', () => {
    const body = pushed(mapInvoice(rec({
      currencyCode: 'SAR', reference: ' PO ref ', notes: 'ملاحظة', description: '', purchaseOrder: 'PO-7', outstandingAmount: 400,
    }), { contactUuid: CONTACT, uuid: INVOICE }));
    expect(body).toEqual({
      number: 'INV-0001', date: '2026-01-01', dueDate: '2026-01-31', total: 1000, contactUuid: CONTACT, uuid: INVOICE,
      outstandingAmount: 400, extPlatformId: 'INV-1', remindersEnabled: true,
      reference: 'PO ref', notes: 'ملاحظة', purchaseOrder: 'PO-7',
    });
  });

  it('leaves uuid out when it is not known yet, and uses the total when the platform gives no outstanding', () => {
    const body = pushed(mapInvoice(rec(), { contactUuid: CONTACT }));
    expect(body).not.toHaveProperty('uuid');
    expect(body.outstandingAmount).toBe(1000);
  });

  it('skips drafts, deleted ones too', () => {
    expect(mapInvoice(rec({ status: 'DRAFT' }), { contactUuid: CONTACT })).toEqual({ kind: 'skip', reason: 'draft' });
    expect(mapInvoice(rec({ status: 'DRAFT', deleted: true }), { contactUuid: CONTACT })).toEqual({ kind: 'skip', reason: 'draft' });
  });

  it('pushes voided and deleted invoices with nothing outstanding and reminders off', () => {
    for (const over of [{ status: 'VOIDED' }, { deleted: true }, { status: 'PAID', deleted: true }]) {
      const body = pushed(mapInvoice(rec({ ...over, outstandingAmount: 500 }), { contactUuid: CONTACT, paymentsTotal: 100 }));
      expect(body).toMatchObject({ outstandingAmount: 0, remindersEnabled: false, extPlatformId: 'INV-1' });
    }
  });

  it('pushes a paid invoice with nothing outstanding and reminders on', () => {
    const body = pushed(mapInvoice(rec({ status: 'PAID', outstandingAmount: 1000 }), { contactUuid: CONTACT }));
    expect(body).toMatchObject({ outstandingAmount: 0, remindersEnabled: true });
  });

  it("keeps the platform's outstanding unless known payments say less, never below 0", () => {
    const out = (over: Record<string, unknown>, paymentsTotal?: number): number | undefined =>
      pushed(mapInvoice(rec(over), paymentsTotal === undefined ? { contactUuid: CONTACT } : { contactUuid: CONTACT, paymentsTotal })).outstandingAmount;
    expect(out({ outstandingAmount: 700 }, 100)).toBe(700); // the platform already counted more
    expect(out({ outstandingAmount: 700 }, 600)).toBe(400); // payments we know of say less
    expect(out({}, 250)).toBe(750);
    expect(out({}, 1200)).toBe(0);
    expect(out({ total: 100.1 }, 50.05)).toBe(50.05); // no float noise
  });

  it('never loses an invoice to an over-long text field: identifiers are left out, prose is cut to 255, each one listed', () => {
    const long = (c: string): string => ` ${c.repeat(300)} `;
    const m = mapInvoice(rec({ reference: long('r'), purchaseOrder: long('p'), notes: long('n'), description: `${'ب'.repeat(253)} 😀😀` }), { contactUuid: CONTACT });
    const body = pushed(m);
    expect(body).not.toHaveProperty('reference');
    expect(body).not.toHaveProperty('purchaseOrder');
    expect(body.notes).toBe(`${'n'.repeat(254)}…`);
    // Cut on a character boundary (never half of a surrogate pair), trailing space trimmed, the mark included.
    expect(body.description).toBe(`${'ب'.repeat(253)}…`);
    expect(m.kind === 'push' && m.dropped).toEqual([
      { field: 'reference', reason: '300 characters, the limit is 255' },
      { field: 'notes', reason: '300 characters, the limit is 255', cut: true },
      { field: 'description', reason: '258 characters, the limit is 255', cut: true },
      { field: 'purchaseOrder', reason: '300 characters, the limit is 255' },
    ]);
    // Within the limit, nothing is listed.
    expect(mapInvoice(rec({ notes: 'n'.repeat(255) }), { contactUuid: CONTACT })).toMatchObject({ kind: 'push', dropped: [] });
  });

  it('rejects an invoice whose number is unusable, and one the service schema would refuse', () => {
    expect(mapInvoice({ ...rec(), number: '  ' }, { contactUuid: CONTACT })).toEqual({ kind: 'reject', reason: 'number: required' });
    expect(mapInvoice({ ...rec(), number: 'n'.repeat(256) }, { contactUuid: CONTACT })).toEqual({ kind: 'reject', reason: 'number: 256 characters, the limit is 255' });
    const bad = mapInvoice(rec(), { contactUuid: 'not-a-uuid' });
    expect(bad.kind).toBe('reject');
    expect(bad.kind === 'reject' && bad.reason).toMatch(/^contactUuid: /);
  });
});

describe('mapPayment', () => {
  it('maps amount, date, reference and notes, leaving empty text out', () => {
    const p = paymentRecordSchema.parse({ id: 'P-1', invoiceId: 'INV-1', updatedAt: '2026-02-01T00:00:00Z', amount: 250.5, date: '2026-02-01', reference: ' TRX-9 ', notes: '' });
    expect(mapPayment(p)).toEqual({ kind: 'push', body: { amount: 250.5, date: '2026-02-01', reference: 'TRX-9' }, dropped: [] });
  });
});
