import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contactPageSchema, invoiceSchema, paymentSchema, type Invoice } from '../../src/collections/schemas.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { api, detail, token } from './helpers.js';

const DAY = 86_400_000;
const isoDay = (offsetDays: number): string => new Date(Date.now() + offsetDays * DAY).toISOString().slice(0, 10);

describe('simulator: invoices and payments', () => {
  let sim: Simulator;
  let tok: string;
  let clientId = '';
  let n = 0;
  let contactUuid = '';

  async function fresh(): Promise<void> {
    n += 1;
    clientId = `inv${n}`;
    sim.setClient(clientId, 'secret');
    tok = await token(sim, clientId, 'secret');
    contactUuid = sim.seedContact(clientId, { name: 'Acme', phoneNumber: '+1 555 0100', email: 'ap@acme.example' }).uuid;
  }
  const upsert = async (body: Record<string, unknown>): Promise<Invoice> => {
    const res = await api(sim, 'POST', '/invoice/create-update', { token: tok, body: { contactUuid, date: '2024-01-01', dueDate: isoDay(10), total: 100, ...body } });
    expect(res.status).toBe(200);
    return invoiceSchema.parse(res.body);
  };
  const contact = async () =>
    contactPageSchema.parse((await api(sim, 'GET', '/contact', { token: tok, query: { uuid: contactUuid } })).body).items[0];

  beforeAll(async () => {
    sim = await startSimulator({ clients: [] });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('creates an invoice with defaults, the short contact and creation date', async () => {
    await fresh();
    const inv = await upsert({ number: 'INV-1', extPlatformId: 'x-1', reference: 'PO 7' });
    expect(inv).toMatchObject({
      number: 'INV-1',
      total: 100,
      status: 'UNPAID',
      outstandingAmount: 100,
      totalPaid: 0,
      remindersEnabled: true,
      paidDate: null,
      level: 'UPCOMING',
      extPlatformId: 'x-1',
      reference: 'PO 7',
      notes: null,
      createdAt: new Date().toISOString().slice(0, 10),
      contact: { uuid: contactUuid, name: 'Acme', phoneNumber: '+1 555 0100', email: 'ap@acme.example', firstName: null, lastName: null },
    });
  });

  it('matches without uuid by extPlatformId, then by (contact, number); with uuid updates that invoice', async () => {
    await fresh();
    const first = await upsert({ number: 'INV-1', extPlatformId: 'x-1' });
    const byExt = await upsert({ number: 'INV-1-renumbered', extPlatformId: 'x-1', total: 120 });
    expect(byExt.uuid).toBe(first.uuid);
    expect(byExt).toMatchObject({ number: 'INV-1-renumbered', total: 120, extPlatformId: 'x-1' });
    const byNumber = await upsert({ number: 'INV-1-renumbered', total: 130 });
    expect(byNumber.uuid).toBe(first.uuid);
    expect(byNumber.extPlatformId).toBe('x-1');
    const again = await upsert({ number: 'INV-1-renumbered', extPlatformId: 'x-1', total: 130 });
    expect(again.uuid).toBe(first.uuid);
    const other = await upsert({ number: 'INV-2', extPlatformId: 'x-2' });
    expect(other.uuid).not.toBe(first.uuid);
    const byUuid = await upsert({ uuid: other.uuid, number: 'INV-2b' });
    expect(byUuid.uuid).toBe(other.uuid);
    expect(sim.data(clientId).invoices.map((i) => i.number)).toEqual(['INV-1-renumbered', 'INV-2b']);
  });

  it('answers 404 for an unknown invoice uuid or contact, 422 for a bad body', async () => {
    await fresh();
    const unknownInvoice = await api(sim, 'POST', '/invoice/create-update', {
      token: tok,
      body: { uuid: randomUUID(), number: 'A', date: '2024-01-01', dueDate: '2024-01-31', total: 1, contactUuid },
    });
    expect(unknownInvoice.status).toBe(404);
    expect(unknownInvoice.body).toEqual({ detail: 'Invoice not found' });
    const unknownContact = await api(sim, 'POST', '/invoice/create-update', {
      token: tok,
      body: { number: 'A', date: '2024-01-01', dueDate: '2024-01-31', total: 1, contactUuid: randomUUID() },
    });
    expect(unknownContact.status).toBe(404);
    expect(unknownContact.body).toEqual({ detail: 'Contact not found' });
    const badDate = await api(sim, 'POST', '/invoice/create-update', {
      token: tok,
      body: { number: 'A', date: '2024-02-30', dueDate: '31/01/2024', total: '1', contactUuid },
    });
    expect(badDate.status).toBe(422);
    expect(detail(badDate).map((d) => d.loc)).toEqual([['body', 'date'], ['body', 'dueDate'], ['body', 'total']]);
    // Contact and invoice strings are 1-255 characters (collections-api.md, Limits): the free-text fields too.
    const long = 'x'.repeat(256);
    const tooLong = await api(sim, 'POST', '/invoice/create-update', {
      token: tok,
      body: { number: 'A', date: '2024-01-01', dueDate: '2024-01-31', total: 1, contactUuid, reference: long, notes: long, description: long, purchaseOrder: '' },
    });
    expect(tooLong.status).toBe(422);
    expect(detail(tooLong).map((d) => [d.loc, d.type])).toEqual([
      [['body', 'reference'], 'string_too_long'],
      [['body', 'notes'], 'string_too_long'],
      [['body', 'description'], 'string_too_long'],
      [['body', 'purchaseOrder'], 'string_too_short'],
    ]);
    expect(sim.data(clientId).invoices).toHaveLength(0);
    await upsert({ number: 'A', reference: 'x'.repeat(255) });
  });

  it('clears a text field sent as null, on create-update by uuid or by extPlatformId', async () => {
    await fresh();
    const first = await upsert({ number: 'INV-N', extPlatformId: 'x-n', reference: 'R-1', notes: 'call first', description: 'd', purchaseOrder: 'PO-1' });
    const byUuid = await upsert({ uuid: first.uuid, number: 'INV-N', extPlatformId: 'x-n', reference: null, notes: 'call later' });
    expect(byUuid).toMatchObject({ uuid: first.uuid, reference: null, notes: 'call later', description: 'd', purchaseOrder: 'PO-1' });
    const byExt = await upsert({ number: 'INV-N', extPlatformId: 'x-n', description: null, purchaseOrder: null });
    expect(byExt).toMatchObject({ uuid: first.uuid, reference: null, notes: 'call later', description: null, purchaseOrder: null });
    // A new invoice with nulls simply has those fields unset.
    expect(await upsert({ number: 'INV-M', reference: null, notes: null })).toMatchObject({ reference: null, notes: null });
  });

  it('derives status, level, paidDate and totalPaid', async () => {
    await fresh();
    expect(await upsert({ number: 'OD', dueDate: isoDay(-3) })).toMatchObject({ level: 'OVER-DUE', status: 'UNPAID', risk: 'MEDIUM' });
    expect(await upsert({ number: 'OLD', dueDate: isoDay(-45) })).toMatchObject({ level: 'OVER-DUE', risk: 'HIGH' });
    expect(await upsert({ number: 'DUE', dueDate: isoDay(0) })).toMatchObject({ level: 'DUE' });
    expect(await upsert({ number: 'UP', dueDate: isoDay(5) })).toMatchObject({ level: 'UPCOMING', risk: 'LOW' });
    const paid = await upsert({ number: 'OD', dueDate: isoDay(-3), outstandingAmount: 0 });
    expect(paid).toMatchObject({ status: 'PAID', level: 'PAID', paidDate: isoDay(0), totalPaid: 100, outstandingAmount: 0 });
    const partly = await upsert({ number: 'UP', dueDate: isoDay(5), outstandingAmount: 40 });
    expect(partly).toMatchObject({ status: 'UNPAID', totalPaid: 60, outstandingAmount: 40, paidDate: null });
    const reopened = await upsert({ number: 'OD', dueDate: isoDay(-3), outstandingAmount: 10 });
    expect(reopened).toMatchObject({ status: 'UNPAID', paidDate: null, level: 'OVER-DUE' });
  });

  it('aggregates a contact over its invoices, and moves an invoice between contacts', async () => {
    await fresh();
    await upsert({ number: 'A', total: 100.1 });
    await upsert({ number: 'B', total: 200.2, outstandingAmount: 50 });
    const c = await upsert({ number: 'C', total: 300, outstandingAmount: 0 });
    const agg = await contact();
    expect(agg).toMatchObject({ totalAmount: 600.3, outstandingAmount: 150.1, totalPaid: 450.2, totalInvoices: 3, countUnpaidInvoices: 2, risk: 'LOW' });
    const other = sim.seedContact(clientId, { name: 'Other' });
    await upsert({ uuid: c.uuid, number: 'C', total: 300, outstandingAmount: 0, contactUuid: other.uuid });
    const after = sim.data(clientId).contacts;
    expect(after[0]).toMatchObject({ totalInvoices: 2, totalAmount: 300.3 });
    expect(after[1]).toMatchObject({ totalInvoices: 1, totalAmount: 300, countUnpaidInvoices: 0 });
  });

  it('seeds payments and updates them; payments drive outstanding only when it was not sent', async () => {
    await fresh();
    const inv = await upsert({ number: 'P-1', total: 100 });
    const p1 = sim.seedPayment(clientId, { invoiceUuid: inv.uuid, amount: 30, date: '2024-02-01', reference: 'r1' });
    expect(paymentSchema.parse(p1)).toMatchObject({ amount: 30, date: '2024-02-01', reference: 'r1', notes: null, paymentType: 'PAYMENT' });
    expect(sim.data(clientId).invoices[0]).toMatchObject({ outstandingAmount: 70, totalPaid: 30, status: 'UNPAID' });

    const updated = await api(sim, 'PUT', `/invoice/payment/${p1.uuid}`, { token: tok, body: { amount: 100, notes: 'settled', date: '2024-02-02' } });
    expect(updated.status).toBe(200);
    expect(paymentSchema.parse(updated.body)).toMatchObject({ uuid: p1.uuid, amount: 100, notes: 'settled', date: '2024-02-02', reference: 'r1' });
    expect(sim.data(clientId).invoices[0]).toMatchObject({ outstandingAmount: 0, status: 'PAID', paidDate: isoDay(0) });
    expect(sim.data(clientId).payments).toEqual([expect.objectContaining({ uuid: p1.uuid, invoiceUuid: inv.uuid, amount: 100 })]);

    // an explicit outstanding wins over payments
    await upsert({ number: 'P-1', total: 100, outstandingAmount: 80 });
    await api(sim, 'PUT', `/invoice/payment/${p1.uuid}`, { token: tok, body: { amount: 10 } });
    expect(sim.data(clientId).invoices[0]).toMatchObject({ outstandingAmount: 80, status: 'UNPAID' });

    const unknown = await api(sim, 'PUT', `/invoice/payment/${randomUUID()}`, { token: tok, body: { amount: 1 } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Payment not found' });
    const badPath = await api(sim, 'PUT', '/invoice/payment/not-a-uuid', { token: tok, body: {} });
    expect(badPath.status).toBe(422);
    expect(detail(badPath)[0]?.loc).toEqual(['path', 'uuid']);
    const badBody = await api(sim, 'PUT', `/invoice/payment/${p1.uuid}`, { token: tok, body: { date: 'yesterday' } });
    expect(detail(badBody)[0]?.loc).toEqual(['body', 'date']);
    expect(() => sim.seedPayment(clientId, { invoiceUuid: randomUUID(), amount: 1, date: '2024-01-01' })).toThrow('Invoice not found');
  });

  it('keeps payments of one client away from another', async () => {
    await fresh();
    const inv = await upsert({ number: 'Q-1' });
    const p = sim.seedPayment(clientId, { invoiceUuid: inv.uuid, amount: 5, date: '2024-01-01' });
    const ownerClient = clientId;
    await fresh();
    const res = await api(sim, 'PUT', `/invoice/payment/${p.uuid}`, { token: tok, body: { amount: 99 } });
    expect(res.status).toBe(404);
    expect(sim.data(ownerClient).payments[0]?.amount).toBe(5);
  });
});
