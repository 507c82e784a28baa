/**
 * What the platform holds is what the service holds: a field removed on the platform is cleared in the service
 * (sent as null on the next update), a changed one replaced, an unchanged resync sends nothing; an invoice whose
 * text fields are over the service's limit is pushed all the same, and the run report names the record and field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Contact } from '../../src/collections/schemas.js';
import { MemoryPlatformRegistry, type RawRecord } from '../../src/platforms/memory/index.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const CLIENT = 'client-fidel';
const T0 = Date.parse('2026-11-01T00:00:00Z');

/** Every request the service answered, all routes and statuses (the token endpoint included). */
function requests(rig: Rig): number {
  return Object.values(rig.sim.counters().requests).reduce((n, byStatus) => n + Object.values(byStatus).reduce((a, b) => a + b, 0), 0);
}

describe('data fidelity between the platform and the service', () => {
  const redis = useTestRedis();
  let rig: Rig;
  const memory = new MemoryPlatformRegistry();
  const platform = memory.get('fidel');
  let stamp = 0;
  const at = (): string => new Date(T0 + (stamp += 1000)).toISOString();
  const contact = (id: string, over: Record<string, unknown>): RawRecord => ({ id, updatedAt: at(), name: `Customer ${id}`, companyId: 'co-1', ...over });
  const stored = (id: string): Contact => {
    const found = rig.sim.data(CLIENT).contacts.find((c) => c.extPlatformId === id);
    if (!found) throw new Error(`contact ${id} is not in the service`);
    return found;
  };

  beforeAll(async () => {
    platform.upsertMany('contacts', [
      contact('C-1', { phoneNumber: '+966 50 111 1111', email: 'ap@one.example', city: 'Riyadh', persons: [{ name: 'Jane', email: 'jane@one.example', phoneNumber: '+966 50 000 0001' }] }),
      contact('C-2', { phoneNumber: '+966 50 222 2222', email: 'ap@two.example' }),
      contact('C-3', { phoneNumber: '+966 50 333 3333', email: 'not an email' }),
    ]);
    platform.upsert('invoices', {
      id: 'I-1', contactId: 'C-1', updatedAt: at(), status: 'AUTHORISED', number: 'INV-1', date: '2026-10-01', dueDate: '2026-10-31', total: 500,
      reference: 'R'.repeat(300), notes: 'N'.repeat(400), description: 'short', purchaseOrder: 'PO-1',
    });
    rig = await startRig({ redisUrl: redis.url, memory, tenants: [{ id: 'fidel', clientId: CLIENT, platform: { kind: 'memory', name: 'fidel' } }] });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('pushes an invoice whose text is over the limit, and the run report names the record and each field', async () => {
    const run = await rig.sync('fidel');
    expect(run.outcome).toBe('succeeded');
    const invoice = rig.sim.data(CLIENT).invoices.find((i) => i.extPlatformId === 'I-1');
    expect(invoice).toMatchObject({ number: 'INV-1', reference: null, notes: `${'N'.repeat(254)}…`, description: 'short', purchaseOrder: 'PO-1' });
    expect(run.counts['invoices.fieldsDropped']).toBe(1);
    expect(run.counts['contacts.fieldsDropped']).toBe(1);
    expect(run.errors).toEqual(expect.arrayContaining([
      'invoices I-1: reference left out (300 characters, the limit is 255)',
      'invoices I-1: notes cut (400 characters, the limit is 255)',
      'contacts C-3: email left out (not a valid email address)',
    ]));
    // The contact's own flag in the service says the same.
    expect(stored('C-3')).toMatchObject({ hasErrors: true, email: null });
  });

  it('clears in the service a phone or email removed on the platform, and replaces a changed one', async () => {
    const c1 = platform.get('contacts', 'C-1')!;
    const { phoneNumber: _phone, persons: _persons, ...withoutPhone } = c1;
    platform.upsert('contacts', { ...withoutPhone, updatedAt: at() });
    const { email: _email, ...c2 } = platform.get('contacts', 'C-2')!;
    platform.upsert('contacts', { ...c2, updatedAt: at(), phoneNumber: '+966 55 999 9999' });
    const c3 = platform.get('contacts', 'C-3')!;
    platform.upsert('contacts', { ...c3, updatedAt: at(), email: 'ap@three.example' });
    const { notes: _notes, ...invoice } = platform.get('invoices', 'I-1')!;
    platform.upsert('invoices', { ...invoice, updatedAt: at(), reference: 'REF-1' });

    const run = await rig.sync('fidel');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.updated']).toBe(3);
    expect(stored('C-1')).toMatchObject({ phoneNumber: null, email: 'ap@one.example', city: 'Riyadh', secondaryContacts: [] });
    expect(stored('C-2')).toMatchObject({ phoneNumber: '+966 55 999 9999', email: null });
    // Fixed at the source: the email arrives and the flag (with its detail) is cleared.
    expect(stored('C-3')).toMatchObject({ email: 'ap@three.example', hasErrors: false, errorDetail: null });
    expect(rig.sim.data(CLIENT).invoices.find((i) => i.extPlatformId === 'I-1')).toMatchObject({ reference: 'REF-1', notes: null, description: 'short' });
    expect(run.errors).toEqual([]);
  });

  it('sends no request at all when nothing changed', async () => {
    const before = requests(rig);
    const run = await rig.sync('fidel');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.skipped']).toBe(3);
    expect(requests(rig) - before).toBe(0);
  });
});
