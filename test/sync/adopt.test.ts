/**
 * Adoption: a tenant's first sync adopts contacts already in the service (matched on extPlatformId), and an
 * `id-map rebuild` (state forgotten) re-adopts everything without creating a second contact or invoice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryPlatformRegistry } from '../../src/platforms/memory/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('adoption of existing service records', () => {
  let redis: TestRedis;
  let rig: Rig;
  const memory = new MemoryPlatformRegistry();
  const data = sampleData({ contacts: 60, seed: 5 });

  beforeAll(async () => {
    redis = await startTestRedis();
    const store = memory.get('adopt');
    store.upsertMany('contacts', data.contacts);
    store.upsertMany('invoices', data.invoices);
    rig = await startRig({ redisUrl: redis.url, memory, tenants: [{ id: 'adopt', platform: { kind: 'memory', name: 'adopt' } }] });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
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
});
