import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { TenantFlags } from '../../src/state/flags.js';
import { createStateStores, type StateStores } from '../../src/state/index.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

async function fill(s: StateStores, flags: TenantFlags, tenant: string): Promise<void> {
  await s.records.setMany(tenant, 'contacts', [{ id: 'c1', uuid: 'u1', hash: 'h' }]);
  await s.records.setMany(tenant, 'invoices', [{ id: 'i1', uuid: 'u2' }]);
  await s.records.setMany(tenant, 'payments', [{ id: 'p1', hash: 'h' }]);
  await s.intents.begin(tenant, 'c2', { name: 'n', at: 1, runId: 'r' });
  await s.cursors.advance(tenant, 'contacts', { updatedAt: '2026-01-01T00:00:00Z', id: 'c1' });
  await s.cursors.saveCheckpoint(tenant, 'r', 'contacts', { counts: {} });
  await s.deadLetters.add(tenant, [{ entity: 'invoices', platformId: 'i9', reason: 'r', code: 'c', runId: 'r', at: 1 }]);
  await s.pending.add(tenant, [{ id: 'i3', record: {}, firstSeenAt: 1, waitingFor: 'c3' }]);
  await s.paymentLedger.setMany(tenant, [{ invoiceId: 'i1', paymentId: 'p1', amount: 5, deleted: false }]);
  await s.runs.start(tenant, { runId: 'r', mode: 'full', startedAt: 1, trigger: 'test' });
  await flags.set(tenant, 'adopted', '1');
}

describe('createStateStores', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  const keysOf = async (pattern: string): Promise<string[]> => (await redis.keys(pattern.replace(/[{}]/g, '\\$&'))).sort();

  it("puts every key of a tenant under the prefix's base with the tenant as its hash tag (one Cluster slot per tenant)", async () => {
    const prefix = testPrefix();
    const s = createStateStores(redis, prefix);
    await fill(s, new TenantFlags(redis, prefix), 'acme');
    const keys = await keysOf(`${keyBase(prefix)}:*`);
    // Id maps and ledgers share the packed maps (`rec`, one per entity).
    expect(keys.length).toBeGreaterThanOrEqual(12);
    // Redis Cluster hashes the first {...} of a key: every key's first tag is the tenant.
    expect(keys.every((k) => k.startsWith(`${keyBase(prefix)}:`) && /^[^{]*\{acme\}/.test(k))).toBe(true);
  });

  it('forgetTenant deletes all of a tenant\'s state, not its run lock, not another tenant\'s', async () => {
    const prefix = testPrefix();
    const s = createStateStores(redis, prefix);
    const flags = new TenantFlags(redis, prefix);
    await fill(s, flags, 'acme');
    await fill(s, flags, 'beta');
    const betaBefore = await keysOf(`${keyBase(prefix)}:*:{beta}*`);
    await s.runLock.acquire('acme', 'me', 60_000);
    const n = await s.forgetTenant('acme');
    expect(n).toBeGreaterThanOrEqual(12);
    expect(await keysOf(`${keyBase(prefix)}:*{acme}*`)).toEqual([`${keyBase(prefix)}:lock:run:{acme}`]);
    expect(await keysOf(`${keyBase(prefix)}:*:{beta}*`)).toEqual(betaBefore);
    expect(await s.records.get('acme', 'contacts', 'c1')).toBeUndefined();
    expect(await s.runs.last('acme')).toBeUndefined();
    expect((await s.records.get('beta', 'contacts', 'c1'))?.uuid).toBe('u1');
    expect(await flags.get('acme', 'adopted')).toBeNull();
    expect(await flags.get('beta', 'adopted')).toBe('1');
  });

  it('forgetTenant can keep the run history', async () => {
    const prefix = testPrefix();
    const s = createStateStores(redis, prefix);
    await fill(s, new TenantFlags(redis, prefix), 'acme');
    await s.forgetTenant('acme', { keepRuns: true });
    expect((await s.runs.last('acme'))?.runId).toBe('r');
    expect(await s.deadLetters.count('acme')).toBe(0);
    expect(await s.paymentLedger.totals('acme', ['i1'])).toEqual(new Map());
  });
});
