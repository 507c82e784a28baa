/** Every client method against the simulator over real HTTP: happy paths, 404, local refusals, aborts. */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AbortedError, NotFoundError, ValidationError, errorCode } from '../../src/collections/errors.js';
import { caught, CLIENT_ID, count, useFixture, type Fixture } from './fixture.js';

let f!: Fixture;
useFixture((x) => (f = x));

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

describe('contacts', () => {
  it('creates a contact and the service stores it', async () => {
    const name = uniq('Acme');
    const c = await f.client.createContact({ name, email: 'ap@acme.test', extPlatformId: 'p-1', phoneNumber: '+966500000001' });
    expect(c.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(c.name).toBe(name);
    expect(c.extPlatformId).toBe('p-1');
    expect(f.sim.data(CLIENT_ID).contacts.find((x) => x.uuid === c.uuid)?.email).toBe('ap@acme.test');
    expect(count(f.sim, 'POST /contact', '200')).toBe(1);
  });

  it('updates a contact by uuid', async () => {
    const c = await f.client.createContact({ name: uniq('Upd') });
    const u = await f.client.updateContact({ uuid: c.uuid, remindersEnabled: false, city: 'Riyadh' });
    expect(u.uuid).toBe(c.uuid);
    expect(u.remindersEnabled).toBe(false);
    expect(u.city).toBe('Riyadh');
  });

  it('lists contacts with camelCase filters sent as kebab-case parameters', async () => {
    const name = uniq('Filter');
    const on = await f.client.createContact({ name, remindersEnabled: true });
    const off = await f.client.createContact({ name, remindersEnabled: false });
    const page = await f.client.listContacts({ name, remindersEnabled: false, size: 10 });
    expect(page.items.map((c) => c.uuid)).toEqual([off.uuid]);
    expect(page.items.map((c) => c.uuid)).not.toContain(on.uuid);
    expect(page.size).toBe(10);
    expect(page.page).toBe(1);
  });

  it('pages through every contact with listAllContacts (size 100)', async () => {
    const name = uniq('Many');
    for (let i = 0; i < 230; i++) f.sim.seedContact(CLIENT_ID, { name, extPlatformId: `m-${i}` });
    f.sim.resetCounters();
    const seen = new Set<string>();
    for await (const c of f.client.listAllContacts({ name })) seen.add(c.uuid);
    expect(seen.size).toBe(230);
    expect(count(f.sim, 'GET /contact', '200')).toBe(3);
  });

  it('an unknown contact is a NotFoundError, not retried', async () => {
    const err = await caught(f.client.updateContact({ uuid: randomUUID(), name: 'x' }));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(errorCode(err)).toBe('COLLECTIONS_NOT_FOUND');
    expect((err as NotFoundError).status).toBe(404);
    expect((err as NotFoundError).retryable).toBe(false);
    expect(count(f.sim, 'PUT /contact')).toBe(1);
  });
});

describe('invoices and payments', () => {
  it('creates then updates an invoice through create-update', async () => {
    const c = await f.client.createContact({ name: uniq('Inv') });
    const body = { number: uniq('INV'), date: '2024-03-01', dueDate: '2024-03-31', total: 100, outstandingAmount: 100, contactUuid: c.uuid, extPlatformId: uniq('pi') };
    const created = await f.client.upsertInvoice(body);
    expect(created.status).toBe('UNPAID');
    expect(created.contact.uuid).toBe(c.uuid);
    const updated = await f.client.upsertInvoice({ ...body, uuid: created.uuid, outstandingAmount: 40 });
    expect(updated.uuid).toBe(created.uuid);
    expect(updated.outstandingAmount).toBe(40);
    expect(f.sim.data(CLIENT_ID).invoices.filter((i) => i.contact.uuid === c.uuid)).toHaveLength(1);
  });

  it('updates a payment', async () => {
    const c = await f.client.createContact({ name: uniq('Pay') });
    const inv = await f.client.upsertInvoice({ number: uniq('INV'), date: '2024-03-01', dueDate: '2024-03-31', total: 100, contactUuid: c.uuid });
    const p = f.sim.seedPayment(CLIENT_ID, { invoiceUuid: inv.uuid, amount: 10, date: '2024-03-05' });
    const u = await f.client.updatePayment(p.uuid, { amount: 25, reference: 'R-1' });
    expect(u.uuid).toBe(p.uuid);
    expect(u.amount).toBe(25);
    expect(u.reference).toBe('R-1');
  });

  it('an unknown payment is a NotFoundError', async () => {
    const err = await caught(f.client.updatePayment(randomUUID(), { amount: 1 }));
    expect(err).toBeInstanceOf(NotFoundError);
    expect(count(f.sim, 'PUT /invoice/payment/{uuid}')).toBe(1);
  });

  it('refuses a bad payment uuid locally with a path loc', async () => {
    const err = await caught(f.client.updatePayment('not-a-uuid', { date: '2024-13-01' }));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).local).toBe(true);
    expect((err as ValidationError).detail.map((d) => d.loc)).toEqual([['path', 'uuid'], ['body', 'date']]);
    expect(count(f.sim, 'PUT /invoice/payment/{uuid}')).toBe(0);
  });
});

describe('calls', () => {
  it('places a bulk call (201)', async () => {
    const r = await f.client.bulkCall({ contacts: [{ numberToCall: '+966500000010', firstName: 'A', metadata: { k: 1 } }, { numberToCall: '+966500000011' }], countryCode: 'SA', batchSize: 10 });
    expect(r.status).toBe(201);
    const calls = f.sim.data(CLIENT_ID).calls.filter((c) => c.kind === 'bulk' && c.numberToCall.startsWith('+96650000001'));
    expect(calls.map((c) => c.numberToCall).sort()).toEqual(['+966500000010', '+966500000011']);
  });

  it('places a single call for a stored contact (201)', async () => {
    const c = await f.client.createContact({ name: uniq('Call'), phoneNumber: '+966500000020' });
    const r = await f.client.call({ contactUuid: c.uuid });
    expect(r.status).toBe(201);
    expect(f.sim.data(CLIENT_ID).calls.some((x) => x.kind === 'single' && x.contactUuid === c.uuid)).toBe(true);
  });
});

describe('aborts and the metrics hook', () => {
  it('an already aborted signal sends nothing', async () => {
    const ac = new AbortController();
    ac.abort();
    const err = await caught(f.client.listContacts({}, { signal: ac.signal }));
    expect(err).toBeInstanceOf(AbortedError);
    expect(errorCode(err)).toBe('ABORTED');
    expect(count(f.sim, 'GET /contact')).toBe(0);
  });

  it("the caller's abort during a request is ABORTED and not retried", async () => {
    f.sim.setFaults({ latencyMs: 1_500 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const err = await caught(f.client.listContacts({}, { signal: ac.signal }));
    expect(errorCode(err)).toBe('ABORTED');
    expect(f.events.filter((e) => e.route === 'GET /contact')).toHaveLength(1);
  });

  it('reports every attempt to onRequest with route, method, status and attempt', async () => {
    await f.client.listContacts({ size: 1 });
    expect(f.events).toHaveLength(1);
    expect(f.events[0]).toMatchObject({ route: 'GET /contact', method: 'GET', status: 200, attempt: 1 });
    expect(f.events[0]!.durationMs).toBeGreaterThanOrEqual(0);
  });
});
