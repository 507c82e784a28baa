/**
 * Adoption: a tenant's first sync adopts contacts already in the service (matched on extPlatformId), and an
 * `id-map rebuild` (state forgotten) re-adopts everything without creating a second contact or invoice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryPlatformRegistry } from '../../src/platforms/memory/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('adoption of existing service records', () => {
  const redis = useTestRedis();
  let rig: Rig;
  const memory = new MemoryPlatformRegistry();
  const data = sampleData({ contacts: 60, seed: 5 });
  const many = sampleData({ contacts: 120, seed: 9, idPrefix: 'M' });

  beforeAll(async () => {
    const store = memory.get('adopt');
    store.upsertMany('contacts', data.contacts);
    store.upsertMany('invoices', data.invoices);
    memory.get('many').upsertMany('contacts', many.contacts);
    rig = await startRig({
      redisUrl: redis.url,
      memory,
      tenants: [
        { id: 'adopt', platform: { kind: 'memory', name: 'adopt' } },
        { id: 'many', platform: { kind: 'memory', name: 'many' } },
      ],
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('adopts contacts that already exist in the service on the first sync', async () => {
    const existing = data.contacts.slice(0, 20).map((c) => rig.sim.seedContact('client-adopt', { name: `Old ${c.name}`, extPlatformId: c.id }));
    rig.sim.seedContact('client-adopt', { name: 'Somebody else' });
    const run = await rig.sync('adopt');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.adopted']).toBe(20);
    expect(run.counts['contacts.created']).toBe(40);
    expect(run.counts['contacts.updated']).toBe(20);
    const stored = rig.sim.data('client-adopt').contacts;
    expect(stored).toHaveLength(61);
    const ext = stored.map((c) => c.extPlatformId).filter((x) => x);
    expect(new Set(ext).size).toBe(60);
    expect(stored.find((c) => c.uuid === existing[0]!.uuid)?.name).toBe(data.contacts[0]!.name);
  });

  it('re-adopts everything after the id map is forgotten, creating nothing twice', async () => {
    const before = rig.sim.data('client-adopt');
    await rig.app.stores.forgetTenant('adopt', { keepRuns: true });
    const run = await rig.sync('adopt', 'full');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.adopted']).toBe(60);
    expect(run.counts['contacts.created'] ?? 0).toBe(0);
    const after = rig.sim.data('client-adopt');
    expect(after.contacts).toHaveLength(before.contacts.length);
    expect(after.invoices).toHaveLength(before.invoices.length);
    expect(new Set(after.invoices.map((i) => i.uuid))).toEqual(new Set(before.invoices.map((i) => i.uuid)));
  });

  it('reads a listing of many pages several at once, each page once, and adopts the first contact listed for an id', async () => {
    // 450 service contacts (5 pages of 100): the first listed for M-contact 0, 329 of nobody's, the other 119 platform
    // contacts, and a later second contact claiming the first platform id (a duplicate made by hand).
    const [head, ...rest] = many.contacts;
    const first = rig.sim.seedContact('client-many', { name: 'First listed', extPlatformId: head!.id });
    for (let i = 0; i < 329; i += 1) rig.sim.seedContact('client-many', { name: `Unrelated ${i}` });
    for (const c of rest) rig.sim.seedContact('client-many', { name: `Old ${c.name}`, extPlatformId: c.id });
    const later = rig.sim.seedContact('client-many', { name: 'Listed later', extPlatformId: head!.id });
    rig.sim.resetCounters();
    rig.sim.setFaults({ latencyMs: 40 });
    let run;
    try {
      run = await rig.sync('many');
    } finally {
      rig.sim.setFaults({ latencyMs: 0 });
    }
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.adopted']).toBe(120);
    expect(run.counts['contacts.created'] ?? 0).toBe(0);
    const counters = rig.sim.counters();
    expect(counters.requests['GET /contact']).toEqual({ '200': 5 });
    expect(counters.maxConcurrencyByRoute['GET /contact']).toBeGreaterThan(1);
    const stored = rig.sim.data('client-many').contacts;
    expect(stored).toHaveLength(450);
    expect(stored.find((c) => c.uuid === first.uuid)?.name).toBe(head!.name);
    expect(stored.find((c) => c.uuid === later.uuid)?.name).toBe('Listed later');
  });
});
