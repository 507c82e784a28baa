/**
 * Issue 13 item 2 on a real Redis Cluster: every Lua script and the MULTI of our code run on the cluster (a script
 * or MULTI whose keys span two slots fails there with CROSSSLOT), the multi-key commands too, and the keys of
 * several tenants spread over all three masters, each tenant's keys on one.
 */
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallLedger } from '../../src/calls/index.js';
import { loadEnv } from '../../src/config/env.js';
import { connectRedis, createRedis, nodesOf, redisTargetOf } from '../../src/redis/connection.js';
import { keyBase, queuePrefix } from '../../src/redis/keys.js';
import { QUEUES } from '../../src/queues/index.js';
import { createStateStores } from '../../src/state/index.js';
import { RecordMirror } from '../../src/state/record-mirror.js';
import { runEveryScript } from '../helpers/every-script.js';
import { testPrefix } from '../helpers/redis.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';

let cluster: TestCluster;
let redis: Redis;
let probe: Cluster;
beforeAll(async () => {
  cluster = await startTestCluster();
  probe = cluster.client();
  const target = redisTargetOf(loadEnv({ REDIS_CLUSTER_NODES: cluster.nodes }));
  redis = await connectRedis(createRedis(target, 'worker'), target);
  redis.on('error', () => undefined);
}, 60_000);
afterAll(async () => {
  redis?.disconnect();
  probe?.disconnect();
  await cluster?.stop();
});

const TENANTS = Array.from({ length: 12 }, (_, i) => `tenant-${i}`);

describe('the key layout on a Redis Cluster', () => {
  it('runs every script, the MULTI and the multi-key commands, for many owners, without a cross-slot error', async () => {
    const p = testPrefix('scripts');
    for (const [i, tenant] of TENANTS.entries()) {
      await runEveryScript(redis, p, { tenant, client: `client-${i}`, connection: `org-${i}`, app: `app-${i % 3}`, campaign: `cmp-${i}` });
    }
    // Multi-key commands outside scripts: one tenant's keys each time.
    const ledger = new CallLedger(redis, p, { cooldownMs: 60_000 });
    expect((await ledger.peek('tenant-0', ['+966501234567', '+966501234568'])).size).toBe(1);
    await new RecordMirror(redis, p).clear('tenant-1');
    expect(await createStateStores(redis, p).forgetTenant('tenant-2')).toBeGreaterThan(5);
  }, 60_000);

  it("spreads tenants over all three masters, each tenant's keys on one", async () => {
    const p = testPrefix('spread');
    for (const tenant of TENANTS) {
      const s = createStateStores(redis, p);
      await s.records.setMany(tenant, 'contacts', [{ id: 'c1', uuid: 'u1', hash: 'h1' }]);
      await s.cursors.advance(tenant, 'contacts', { updatedAt: '2026-01-01T00:00:00Z', id: 'c1' });
      await s.deadLetters.add(tenant, [{ entity: 'invoices', platformId: 'i1', reason: 'r', code: 'c', runId: 'run-1', at: 1 }]);
      await new CallLedger(redis, p, { cooldownMs: 60_000 }).reserve(tenant, 'cmp', 0, ['+966501234567']);
    }
    const mastersByTenant = new Map<string, Set<number>>();
    const masters = nodesOf(redis);
    expect(masters).toHaveLength(cluster.masters.length || masters.length);
    for (const [n, node] of masters.entries()) {
      const keys = await node.keys(`${keyBase(p)}:*`);
      for (const key of keys) {
        const tenant = /\{([^}]*)\}/.exec(key)?.[1] ?? '?';
        mastersByTenant.set(tenant, (mastersByTenant.get(tenant) ?? new Set()).add(n));
      }
    }
    expect([...mastersByTenant.keys()].sort()).toEqual([...TENANTS].sort());
    for (const [tenant, on] of mastersByTenant) expect(on.size, tenant).toBe(1);
    const used = new Set([...mastersByTenant.values()].flatMap((s) => [...s]));
    expect(used.size).toBe(masters.length);
  });

  it('gives each queue a hash tag of its own', async () => {
    const slots = new Set<number>();
    for (const q of Object.values(QUEUES)) slots.add(Number(await probe.call('CLUSTER', 'KEYSLOT', `${queuePrefix('{cs}', q)}:${q}:wait`)));
    expect(slots.size).toBe(Object.values(QUEUES).length);
  });
});
