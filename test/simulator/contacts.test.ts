import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contactPageSchema, contactSchema, type Contact } from '../../src/collections/schemas.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { api, detail, token } from './helpers.js';

describe('simulator: contacts', () => {
  let sim: Simulator;
  let tok: string;
  let n = 0;
  /** A fresh client per test, so lists start empty. */
  async function fresh(): Promise<void> {
    n += 1;
    sim.setClient(`c${n}`, 'secret');
    tok = await token(sim, `c${n}`, 'secret');
  }
  const post = async (body: unknown): Promise<Contact> => {
    const res = await api(sim, 'POST', '/contact', { token: tok, body });
    expect(res.status).toBe(200);
    return contactSchema.parse(res.body);
  };

  beforeAll(async () => {
    sim = await startSimulator({ clients: [] });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('creates a contact: every request field returned, defaults, short secondary contacts with their own uuids', async () => {
    await fresh();
    const workflow = randomUUID();
    const pi = randomUUID();
    const c = await post({
      name: 'Acme Trading',
      email: 'ap@acme.example',
      phoneNumber: '+966 50 123 4567',
      extPlatformId: 'xero-1',
      emailTone: 'FRIENDLY',
      workflowUuid: workflow,
      paymentInstructions: pi,
      secondaryContacts: [{ name: 'Jane', email: 'jane@acme.example' }, { name: 'Omar', phoneNumber: '+966500000000' }],
      unknownField: 'stripped',
    });
    expect(c.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(c).toMatchObject({
      name: 'Acme Trading',
      email: 'ap@acme.example',
      extPlatformId: 'xero-1',
      emailTone: 'FRIENDLY',
      nameAr: null,
      city: null,
      sendSmsNotif: null,
      role: 'PRIMARY',
      risk: 'LOW',
      hasErrors: false,
      customFields: [],
      remindersEnabled: true,
      totalAmount: 0,
      totalInvoices: 0,
      countUnpaidInvoices: 0,
      workflow: { uuid: workflow },
      paymentInstructions: { uuid: pi },
    });
    expect(c).not.toHaveProperty('unknownField');
    const secondary = c.secondaryContacts ?? [];
    expect(secondary).toHaveLength(2);
    expect(secondary[0]).toEqual({ uuid: expect.any(String) as string, name: 'Jane', firstName: null, lastName: null, phoneNumber: null, email: 'jane@acme.example' });
    expect(secondary[0]!.uuid).not.toBe(secondary[1]!.uuid);
    expect(await post({ name: 'B', role: 'SECONDARY', hasErrors: true, errorDetail: { email: 'dropped' } })).toMatchObject({
      role: 'SECONDARY',
      hasErrors: true,
      errorDetail: { email: 'dropped' },
    });
  });

  it('updates a contact: given fields change, others stay, role is not accepted, unknown uuid is 404', async () => {
    await fresh();
    const c = await post({ name: 'Old Name', city: 'Riyadh', phoneNumber: '123' });
    const res = await api(sim, 'PUT', '/contact', { token: tok, body: { uuid: c.uuid, name: 'New Name', remindersEnabled: false, role: 'SECONDARY' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uuid: c.uuid, name: 'New Name', city: 'Riyadh', phoneNumber: '123', remindersEnabled: false, role: 'PRIMARY' });
    const missing = await api(sim, 'PUT', '/contact', { token: tok, body: { uuid: randomUUID(), name: 'X' } });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Contact not found' });
    const noUuid = await api(sim, 'PUT', '/contact', { token: tok, body: { name: 'X' } });
    expect(noUuid.status).toBe(422);
    expect(detail(noUuid)[0]).toMatchObject({ loc: ['body', 'uuid'], type: 'missing' });
  });

  it('clears a field sent as null on update (returned as null), keeps absent ones; null is refused where it cannot clear', async () => {
    await fresh();
    const c = await post({ name: 'Acme', phoneNumber: '+966 50 111 1111', email: 'ap@acme.example', city: 'Riyadh', hasErrors: true, errorDetail: { x: 'y' }, secondaryContacts: [{ name: 'Jane', email: 'jane@acme.example' }] });
    const put = (body: Record<string, unknown>) => api(sim, 'PUT', '/contact', { token: tok, body: { uuid: c.uuid, ...body } });
    const cleared = await put({ phoneNumber: null, email: null, errorDetail: null, hasErrors: false, secondaryContacts: [{ name: 'Jane', email: null, phoneNumber: null }] });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ phoneNumber: null, email: null, errorDetail: null, hasErrors: false, city: 'Riyadh', name: 'Acme' });
    expect((cleared.body as Contact).secondaryContacts).toEqual([expect.objectContaining({ name: 'Jane', email: null, phoneNumber: null })]);
    // The phone index follows: the cleared number no longer matches a bulk call's number.
    expect(sim.data(`c${n}`).contacts[0]).toMatchObject({ phoneNumber: null });
    const replaced = await put({ phoneNumber: '+966 55 999 9999' });
    expect(replaced.body).toMatchObject({ phoneNumber: '+966 55 999 9999', email: null, city: 'Riyadh' });
    // name cannot be unset, and a create has nothing to clear: null is a 422 there, as a wrong type.
    const noName = await put({ name: null });
    expect(noName.status).toBe(422);
    expect(detail(noName)[0]).toMatchObject({ loc: ['body', 'name'], type: 'string_type' });
    const createNull = await api(sim, 'POST', '/contact', { token: tok, body: { name: 'B', phoneNumber: null } });
    expect(createNull.status).toBe(422);
    expect(detail(createNull)[0]).toMatchObject({ loc: ['body', 'phoneNumber'], type: 'string_type' });
    // A null is not a way around the limits: a value sent is still checked.
    const long = await put({ city: 'x'.repeat(256), email: 'not-an-email' });
    expect(long.status).toBe(422);
    expect(detail(long).map((d) => d.type)).toEqual(['string_too_long', 'email_parsing']);
  });

  it('answers 422 with loc for bad bodies and malformed JSON', async () => {
    await fresh();
    const cases: Array<[unknown, Array<string | number>, string]> = [
      [{ name: 'x'.repeat(256) }, ['body', 'name'], 'string_too_long'],
      [{ name: '' }, ['body', 'name'], 'string_too_short'],
      [{}, ['body', 'name'], 'missing'],
      [{ name: 'A', email: 'not-an-email' }, ['body', 'email'], 'email_parsing'],
      [{ name: 'A', emailTone: 'ANGRY' }, ['body', 'emailTone'], 'enum'],
      [{ name: 'A', secondaryContacts: [{ name: 'ok' }, { email: 'bad' }] }, ['body', 'secondaryContacts', 1, 'email'], 'email_parsing'],
      [{ name: 'A', workflowUuid: 'nope' }, ['body', 'workflowUuid'], 'guid_parsing'],
    ];
    for (const [body, loc, type] of cases) {
      const res = await api(sim, 'POST', '/contact', { token: tok, body });
      expect(res.status).toBe(422);
      expect(detail(res)).toContainEqual({ loc, msg: expect.any(String) as string, type });
    }
    const malformed = await api(sim, 'POST', '/contact', { token: tok, raw: '{"name": ' });
    expect(malformed.status).toBe(422);
    expect(detail(malformed)).toEqual([{ loc: ['body'], msg: expect.any(String) as string, type: 'json_invalid' }]);
    expect(sim.data(`c${n}`).contacts).toHaveLength(0);
  });

  it('lists in creation order with page, size, total and pages', async () => {
    await fresh();
    for (let i = 0; i < 7; i++) await post({ name: `Contact ${i}` });
    const res = await api(sim, 'GET', '/contact', { token: tok, query: { page: 2, size: 3 } });
    expect(res.status).toBe(200);
    const page = contactPageSchema.parse(res.body);
    expect(page).toMatchObject({ total: 7, page: 2, size: 3, pages: 3 });
    expect(page.items.map((c) => c.name)).toEqual(['Contact 3', 'Contact 4', 'Contact 5']);
    const defaults = contactPageSchema.parse((await api(sim, 'GET', '/contact', { token: tok })).body);
    expect(defaults).toMatchObject({ total: 7, page: 1, size: 50, pages: 1 });
    const beyond = contactPageSchema.parse((await api(sim, 'GET', '/contact', { token: tok, query: { page: 9, size: 3 } })).body);
    expect(beyond).toMatchObject({ items: [], total: 7, page: 9 });
  });

  it('filters by name (case-insensitive substring), uuid, account-number, workflow-uuid, reminders-enabled, risk-level', async () => {
    await fresh();
    const wf = randomUUID();
    const a = await post({ name: 'Gulf Steel Co', accountNumber: 'ACC-1', workflowUuid: wf });
    await post({ name: 'Desert STEEL', remindersEnabled: false });
    await post({ name: 'Palm Foods', accountNumber: 'ACC-2' });
    const names = async (query: Record<string, string | number | boolean>): Promise<string[]> => {
      const res = await api(sim, 'GET', '/contact', { token: tok, query });
      expect(res.status).toBe(200);
      return contactPageSchema.parse(res.body).items.map((c) => c.name ?? '');
    };
    expect(await names({ name: 'steel' })).toEqual(['Gulf Steel Co', 'Desert STEEL']);
    expect(await names({ uuid: a.uuid })).toEqual(['Gulf Steel Co']);
    expect(await names({ 'account-number': 'ACC-2' })).toEqual(['Palm Foods']);
    expect(await names({ 'workflow-uuid': wf })).toEqual(['Gulf Steel Co']);
    expect(await names({ 'reminders-enabled': false })).toEqual(['Desert STEEL']);
    expect(await names({ 'reminders-enabled': true, name: 'steel' })).toEqual(['Gulf Steel Co']);
    expect(await names({ 'risk-level': 'LOW' })).toHaveLength(3);
    expect(await names({ 'risk-level': 'HIGH' })).toEqual([]);
    expect(await names({ 'reminder-status': 'anything' })).toEqual([]);
  });

  it('filters by aggregate ranges (total amount, outstanding amount, invoice count)', async () => {
    await fresh();
    const big = await post({ name: 'Big' });
    const small = await post({ name: 'Small' });
    await post({ name: 'None' });
    const inv = (contactUuid: string, number: string, total: number, outstandingAmount?: number) =>
      api(sim, 'POST', '/invoice/create-update', {
        token: tok,
        body: { number, date: '2030-01-01', dueDate: '2030-02-01', total, contactUuid, ...(outstandingAmount !== undefined && { outstandingAmount }) },
      });
    expect((await inv(big.uuid, 'B1', 1000)).status).toBe(200);
    expect((await inv(big.uuid, 'B2', 500, 0)).status).toBe(200);
    expect((await inv(small.uuid, 'S1', 50)).status).toBe(200);
    const names = async (query: Record<string, number>): Promise<string[]> =>
      contactPageSchema.parse((await api(sim, 'GET', '/contact', { token: tok, query })).body).items.map((c) => c.name ?? '');
    expect(await names({ 'total-amount-from': 100 })).toEqual(['Big']);
    expect(await names({ 'total-amount-to': 100 })).toEqual(['Small', 'None']);
    expect(await names({ 'outstanding-amount-from': 1000, 'outstanding-amount-to': 1000 })).toEqual(['Big']);
    expect(await names({ 'total-invoices-from': 1 })).toEqual(['Big', 'Small']);
    expect(await names({ 'total-invoices-from': 2, 'total-invoices-to': 2 })).toEqual(['Big']);
    expect(await names({ 'total-invoices-to': 0 })).toEqual(['None']);
  });

  it('answers 422 with kebab-case query locs', async () => {
    await fresh();
    const cases: Array<[Record<string, string>, string]> = [
      [{ size: '101' }, 'size'],
      [{ size: '0' }, 'size'],
      [{ page: '0' }, 'page'],
      [{ 'account-number': 'x'.repeat(256) }, 'account-number'],
      [{ 'workflow-uuid': 'nope' }, 'workflow-uuid'],
      [{ 'reminders-enabled': 'maybe' }, 'reminders-enabled'],
      [{ 'total-invoices-from': '1.5' }, 'total-invoices-from'],
    ];
    for (const [query, name] of cases) {
      const res = await api(sim, 'GET', '/contact', { token: tok, query });
      expect(res.status).toBe(422);
      expect(detail(res)[0]?.loc).toEqual(['query', name]);
    }
  });

  it('answers 404 for unknown routes and 405 for a wrong method', async () => {
    await fresh();
    expect((await api(sim, 'GET', '/nothing-here', { token: tok })).status).toBe(404);
    const wrong = await api(sim, 'DELETE', '/contact', { token: tok });
    expect(wrong.status).toBe(405);
    expect(wrong.headers['allow']).toContain('POST');
  });
});
