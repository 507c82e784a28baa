import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

const CLIENT = 'client-acme';
const writes = (rig: Rig): number => rig.sim.counters().writesCommitted;

describe('a file tenant syncs into the service exactly once', () => {
  let redis: TestRedis;
  let rig: Rig;
  let folder: string;
  let data: SampleData;

  beforeAll(async () => {
    redis = await startTestRedis();
    folder = await mkdtemp(join(tmpdir(), 'cs-sync-'));
    data = sampleData({ contacts: 800, seed: 7, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    await writeSampleFolder(folder, data);
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'file', path: folder } }] });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  it('lands every valid record once with its fields, Arabic included', async () => {
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    const stored = rig.sim.data(CLIENT);
    expect(stored.contacts).toHaveLength(data.contacts.length);
    const byExt = new Map(stored.contacts.map((c) => [c.extPlatformId, c]));
    expect(byExt.size).toBe(data.contacts.length);
    for (const rec of data.contacts) {
      const c = byExt.get(rec.id);
      expect(c, rec.id).toBeDefined();
      expect(c?.name).toBe(rec.name);
      expect(c?.nameAr).toBe(rec.nameAr);
      expect(c?.firstNameAr).toBe(rec.firstNameAr);
      expect(c?.remindersEnabled).toBe(true);
      expect(c?.extCompanyId).toBe(rec.companyId);
    }
    const pushable = data.invoices.filter((i) => i.status !== 'DRAFT');
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
    expect(run.counts['contacts.created']).toBe(data.contacts.length);
    expect(run.counts['invoices.created']).toBe(pushable.length);
    expect(run.counts['payments.unlinked']).toBe(data.payments.length);
  });

  it('sends no write request when nothing changed', async () => {
    const before = writes(rig);
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    expect(writes(rig) - before).toBe(0);
  });

  it('sends exactly the writes of the records that changed', async () => {
    const later = new Date('2026-11-10T00:00:00Z').getTime();
    const changedContacts = data.contacts.filter((_, i) => i % 10 === 0);
    for (const [n, c] of changedContacts.entries()) {
      c.name = `${c.name} (renamed)`;
      c.updatedAt = new Date(later + n).toISOString();
    }
    const changedInvoices = data.invoices.filter((inv, i) => i % 10 === 3 && inv.status === 'AUTHORISED');
    for (const [n, inv] of changedInvoices.entries()) {
      inv.dueDate = '2026-12-31';
      inv.updatedAt = new Date(later + n).toISOString();
    }
    await writeSampleFolder(folder, data);
    const before = writes(rig);
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    expect(writes(rig) - before).toBe(changedContacts.length + changedInvoices.length);
    expect(run.counts['contacts.updated']).toBe(changedContacts.length);
    expect(run.counts['invoices.updated']).toBe(changedInvoices.length);
    const stored = rig.sim.data(CLIENT);
    expect(stored.contacts).toHaveLength(data.contacts.length);
    expect(stored.contacts.filter((c) => c.name?.endsWith('(renamed)'))).toHaveLength(changedContacts.length);
  });
});
