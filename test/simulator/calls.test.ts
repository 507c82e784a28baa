import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TEMPLATE, startSimulator, type Simulator } from '../../src/simulator/index.js';
import { api, detail, token } from './helpers.js';

interface BulkAnswer {
  calls: Array<{ uuid: string; numberToCall: string; contactUuid: string }>;
}

describe('simulator: AI phone calls', () => {
  let sim: Simulator;
  let tok: string;
  let clientId = '';
  let n = 0;
  async function fresh(): Promise<void> {
    n += 1;
    clientId = `calls${n}`;
    sim.setClient(clientId, 'secret');
    tok = await token(sim, clientId, 'secret');
  }
  const bulk = (body: unknown) => api(sim, 'POST', '/ai/phone-calls/action/call-bulk', { token: tok, body });

  beforeAll(async () => {
    sim = await startSimulator({ clients: [] });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('stores one call per contact with metadata and the substituted prompt, not the promptTags', async () => {
    await fresh();
    const res = await bulk({
      contacts: [
        {
          numberToCall: '+966 50 111 2222',
          firstName: 'Sara',
          lastName: 'Ali',
          metadata: { invoiceIds: ['i-1'], tenant: 't1' },
          promptTags: { customerName: 'Sara Ali', amountDue: 'SAR 1,200', invoiceNumbers: 'INV-1', unused: 'x' },
        },
        { numberToCall: '0500000001' },
      ],
    });
    expect(res.status).toBe(201);
    const answer = res.body as BulkAnswer;
    expect(answer.calls).toHaveLength(2);
    expect(answer.calls[0]).toMatchObject({ numberToCall: '+966 50 111 2222' });
    const { calls, contacts } = sim.data(clientId);
    expect(calls).toHaveLength(2);
    const first = calls[0]!;
    expect(first).toMatchObject({ kind: 'bulk', clientId, uuid: answer.calls[0]!.uuid, firstName: 'Sara', lastName: 'Ali', metadata: { invoiceIds: ['i-1'], tenant: 't1' }, templateId: null });
    expect(first.prompt).toContain('calling Sara Ali about SAR 1,200 owed on invoices INV-1');
    expect(first.prompt).toContain('{{daysOverdue}}');
    expect(first).not.toHaveProperty('promptTags');
    expect(JSON.stringify(calls)).not.toContain('"unused"');
    expect(calls[1]).toMatchObject({ metadata: null, firstName: null, prompt: DEFAULT_TEMPLATE.prompt });
    expect(contacts.map((c) => [c.name, c.phoneNumber, c.uuid])).toEqual([
      ['Sara Ali', '+966 50 111 2222', answer.calls[0]!.contactUuid],
      ['0500000001', '0500000001', answer.calls[1]!.contactUuid],
    ]);
  });

  it('matches existing contacts by phone digits; updateExisting renames them, otherwise they stay', async () => {
    await fresh();
    const existing = sim.seedContact(clientId, { name: 'Old Co', firstName: 'Old', lastName: 'Name', phoneNumber: '+1 (555) 010-0200' });
    const noUpdate = await bulk({ contacts: [{ numberToCall: '15550100200', firstName: 'New', lastName: 'Person' }] });
    expect((noUpdate.body as BulkAnswer).calls[0]?.contactUuid).toBe(existing.uuid);
    expect(sim.data(clientId).contacts).toEqual([expect.objectContaining({ firstName: 'Old', lastName: 'Name' })]);
    const update = await bulk({ updateExisting: true, contacts: [{ numberToCall: '+15550100200', firstName: 'New', lastName: 'Person' }] });
    expect((update.body as BulkAnswer).calls[0]?.contactUuid).toBe(existing.uuid);
    expect(sim.data(clientId).contacts).toEqual([expect.objectContaining({ uuid: existing.uuid, name: 'Old Co', firstName: 'New', lastName: 'Person' })]);
    const twice = await bulk({ contacts: [{ numberToCall: '+44 20 0000 0001', firstName: 'A' }, { numberToCall: '44-20-0000-0001' }] });
    const [a, b] = (twice.body as BulkAnswer).calls;
    expect(a?.contactUuid).toBe(b?.contactUuid);
    expect(sim.data(clientId).contacts).toHaveLength(2);
  });

  it('uses a known template, refuses an unknown one', async () => {
    await fresh();
    const tpl = randomUUID();
    sim.addTemplate({ uuid: tpl, prompt: 'Hello {{ name }}, this is about {{invoice}}.' });
    const ok = await bulk({ aiSettingsTemplateId: tpl, contacts: [{ numberToCall: '1', promptTags: { name: 'Bob', invoice: 'INV-9' } }] });
    expect(ok.status).toBe(201);
    expect(sim.data(clientId).calls[0]).toMatchObject({ templateId: tpl, prompt: 'Hello Bob, this is about INV-9.' });
    const unknown = await bulk({ aiSettingsTemplateId: randomUUID(), contacts: [{ numberToCall: '2' }] });
    expect(unknown.status).toBe(422);
    expect(detail(unknown)).toEqual([{ loc: ['body', 'aiSettingsTemplateId'], msg: 'AI settings template not found', type: 'not_found' }]);
    expect(sim.data(clientId).calls).toHaveLength(1);
  });

  it('answers 422 for the violations the description lists', async () => {
    await fresh();
    const cases: Array<[unknown, Array<string | number>]> = [
      [{}, ['body', 'contacts']],
      [{ contacts: [{}] }, ['body', 'contacts', 0, 'numberToCall']],
      [{ contacts: [{ numberToCall: '' }] }, ['body', 'contacts', 0, 'numberToCall']],
      [{ contacts: [{ numberToCall: '1' }, { numberToCall: '9'.repeat(101) }] }, ['body', 'contacts', 1, 'numberToCall']],
      [{ contacts: [], countryCode: 'sa' }, ['body', 'countryCode']],
      [{ contacts: [], aiSettingsTemplateId: 'default' }, ['body', 'aiSettingsTemplateId']],
      [{ contacts: [], batchSize: 5 }, ['body', 'batchSize']],
      [{ contacts: [], batchSize: 1001 }, ['body', 'batchSize']],
      [{ contacts: [{ numberToCall: '1', promptTags: { n: 3 } }] }, ['body', 'contacts', 0, 'promptTags', 'n']],
    ];
    for (const [body, loc] of cases) {
      const res = await bulk(body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(detail(res).map((d) => d.loc)).toContainEqual(loc);
    }
    expect((await bulk({ contacts: [], batchSize: 10, countryCode: 'SA' })).status).toBe(201);
    expect(sim.data(clientId).calls).toHaveLength(0);
  });

  it('places a single call to a stored contact, 404 for an unknown one, 422 without a phone number', async () => {
    await fresh();
    const c = sim.seedContact(clientId, { name: 'Caller', firstName: 'Cal', phoneNumber: '+1 555 0300' });
    const res = await api(sim, 'POST', '/ai/phone-calls/action/call', { token: tok, body: { contactUuid: c.uuid } });
    expect(res.status).toBe(201);
    const { uuid } = res.body as { uuid: string };
    expect(sim.data(clientId).calls).toEqual([expect.objectContaining({ uuid, kind: 'single', contactUuid: c.uuid, numberToCall: '+1 555 0300', firstName: 'Cal' })]);
    const unknown = await api(sim, 'POST', '/ai/phone-calls/action/call', { token: tok, body: { contactUuid: randomUUID() } });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: 'Contact not found' });
    const silent = sim.seedContact(clientId, { name: 'No Phone' });
    const noPhone = await api(sim, 'POST', '/ai/phone-calls/action/call', { token: tok, body: { contactUuid: silent.uuid } });
    expect(noPhone.status).toBe(422);
    expect(detail(noPhone)[0]?.loc).toEqual(['body', 'contactUuid']);
    const bad = await api(sim, 'POST', '/ai/phone-calls/action/call', { token: tok, body: {} });
    expect(detail(bad)[0]).toMatchObject({ loc: ['body', 'contactUuid'], type: 'missing' });
    expect(sim.data(clientId).calls).toHaveLength(1);
    expect(sim.counters().writesCommitted).toBeGreaterThanOrEqual(1);
  });
});
