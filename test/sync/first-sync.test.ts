import { describe, expect, it } from 'vitest';
import type { Rig } from '../helpers/rig.js';
import { useSampleRig } from '../helpers/sample-rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

const CLIENT = 'client-acme';
const writes = (rig: Rig): number => rig.sim.counters().writesCommitted;

describe('a file tenant syncs into the service exactly once', () => {
  const s = useSampleRig({ contacts: 800, seed: 7 });

  it('lands every valid record once with its fields, Arabic included', async () => {
    const run = await s.rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    const stored = s.rig.sim.data(CLIENT);
    expect(stored.contacts).toHaveLength(s.data.contacts.length);
    const byExt = new Map(stored.contacts.map((c) => [c.extPlatformId, c]));
    expect(byExt.size).toBe(s.data.contacts.length);
    for (const rec of s.data.contacts) {
      const c = byExt.get(rec.id);
      expect(c, rec.id).toBeDefined();
      expect(c?.name).toBe(rec.name);
      expect(c?.nameAr).toBe(rec.nameAr);
      expect(c?.firstNameAr).toBe(rec.firstNameAr);
      expect(c?.remindersEnabled).toBe(true);
      expect(c?.extCompanyId).toBe(rec.companyId);
    }
    const pushable = s.data.invoices.filter((i) => i.status !== 'DRAFT');
    expect(stored.invoices).toHaveLength(pushable.length);
    const invByExt = new Map(stored.invoices.map((i) => [i.extPlatformId, i]));
    expect(invByExt.size).toBe(pushable.length);
    for (const rec of pushable) {
      const inv = invByExt.get(rec.id);
      expect(inv?.number).toBe(rec.number);
      expect(inv?.total).toBe(rec.total);
      expect(inv?.contact.uuid).toBe(byExt.get(rec.contactId)?.uuid);
      const expectedOutstanding = rec.status === 'VOIDED' || rec.status === 'PAID' ? 0 : rec.outstandingAmount;
      expect(inv?.outstandingAmount, rec.id).toBeCloseTo(expectedOutstanding ?? rec.total, 6);
      if (rec.status === 'VOIDED') expect(inv?.remindersEnabled).toBe(false);
    }
    expect(run.counts['contacts.created']).toBe(s.data.contacts.length);
    expect(run.counts['invoices.created']).toBe(pushable.length);
    expect(run.counts['payments.unlinked']).toBe(s.data.payments.length);
  });

  it('sends no write request when nothing changed', async () => {
    const before = writes(s.rig);
    const run = await s.rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    expect(writes(s.rig) - before).toBe(0);
  });

  it('sends exactly the writes of the records that changed', async () => {
    const later = new Date('2026-11-10T00:00:00Z').getTime();
    const changedContacts = s.data.contacts.filter((_, i) => i % 10 === 0);
    for (const [n, c] of changedContacts.entries()) {
      c.name = `${c.name} (renamed)`;
      c.updatedAt = new Date(later + n).toISOString();
    }
    const changedInvoices = s.data.invoices.filter((inv, i) => i % 10 === 3 && inv.status === 'AUTHORISED');
    for (const [n, inv] of changedInvoices.entries()) {
      inv.dueDate = '2026-12-31';
      inv.updatedAt = new Date(later + n).toISOString();
    }
    await writeSampleFolder(s.folder, s.data);
    const before = writes(s.rig);
    const run = await s.rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    expect(writes(s.rig) - before).toBe(changedContacts.length + changedInvoices.length);
    expect(run.counts['contacts.updated']).toBe(changedContacts.length);
    expect(run.counts['invoices.updated']).toBe(changedInvoices.length);
    const stored = s.rig.sim.data(CLIENT);
    expect(stored.contacts).toHaveLength(s.data.contacts.length);
    expect(stored.contacts.filter((c) => c.name?.endsWith('(renamed)'))).toHaveLength(changedContacts.length);
  });
});
