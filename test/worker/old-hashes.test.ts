/**
 * The worker's scripts read packed records only (docs/decisions/0180-packed-includes.md): a worker must not start
 * while a configured tenant still has a record in the hashes versions before packed records kept (id maps,
 * mirrors, ledgers), since it would take such a record for unknown. It refuses, naming the tenant and
 * `collections-sync migrate-keys`; once migrate-keys has packed them, it starts. On a real Redis.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ENTITIES } from '../../src/glossary.js';
import { oldHashes, packOldEntries, tenantsWithOldHashes } from '../../src/state/old-hashes.js';
import { startWorker } from '../../src/worker.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('a worker over records not packed yet', () => {
  const redis = useTestRedis();
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'memory' } },
        { id: 'beta', platform: { kind: 'memory' } },
      ],
      worker: false,
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('each of the seven old hashes of a tenant, alone, counts as records left', async () => {
    const { redis: r } = rig.app;
    const prefix = rig.env.KEY_PREFIX;
    const keys = ENTITIES.flatMap((e) => oldHashes(prefix, 'acme', e).map(([k]) => k));
    expect(keys).toHaveLength(7);
    expect(await tenantsWithOldHashes(r, prefix, ['acme', 'beta'])).toEqual([]);
    for (const key of keys) {
      await r.hset(key, 'x1', 'x');
      expect(await tenantsWithOldHashes(r, prefix, ['acme', 'beta']), key).toEqual(['acme']);
      await r.del(key);
    }
  });

  it('refuses to start, naming the tenant and migrate-keys; starts once the old entries are packed', async () => {
    const { redis: r } = rig.app;
    const prefix = rig.env.KEY_PREFIX;
    const [idMap] = oldHashes(prefix, 'acme', 'contacts')[0] ?? [];
    const [payLedger] = oldHashes(prefix, 'acme', 'payments')[1] ?? [];
    await r.hset(idMap ?? '', 'c1', 'AAAAAAAAAAAAAAAAAAAAAA|');
    await r.hset(payLedger ?? '', 'p1', '0|5|i1');

    const refused = startWorker(rig.app, { opsPort: 0, schedules: false });
    await expect(refused).rejects.toThrow(/the Redis state of acme still holds records in the hashes versions before packed records kept .*run `collections-sync migrate-keys` \(a dry run\), then `collections-sync migrate-keys --yes`/);
    // Only the tenant with old hashes is named.
    await expect(startWorker(rig.app, { opsPort: 0, schedules: false })).rejects.toThrow(/state of acme still holds/);

    // What `migrate-keys --yes` does for each tenant of the tenants file, after moving keys.
    expect(await packOldEntries(r, prefix, 'acme', true)).toBe(2);
    expect(await r.exists(idMap ?? '', payLedger ?? '')).toBe(0);
    expect(await rig.app.stores.records.get('acme', 'contacts', 'c1')).toEqual({ uuid: '00000000-0000-0000-0000-000000000000' });
    const worker = await startWorker(rig.app, { opsPort: 0, schedules: false });
    onTestFinished(() => worker.close(10_000));
    expect(worker.workers.length).toBeGreaterThan(0);
  });
});
