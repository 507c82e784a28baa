/**
 * Decision 46: a queue's BullMQ worker that takes no job while jobs of its queue wait is replaced in-process. The
 * wedge seen after a Redis Cluster master's restart (test/cluster/crash.test.ts, about one run in three) cannot be
 * caused on demand, so it is stood in for by what it looks like from outside: the sync queue's BullMQ worker takes
 * no more jobs (closed from under the process: the nearest public stand-in; the real one still says it runs)
 * while a run waits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnRedis, type SpawnedRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('a wedged BullMQ worker is replaced in-process', () => {
  let redis: SpawnedRedis;
  let rig: Rig;

  beforeAll(async () => {
    redis = await spawnRedis();
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], env: { WORKER_WEDGE_S: '5' } });
    rig.memory.get('acme').upsert('contacts', { id: 'C1', updatedAt: '2026-11-01T00:00:00.000Z', name: 'Al Noor Trading', nameAr: 'النور للتجارة' });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
  });

  it('takes a waiting run after the sync worker stopped taking jobs, with a warn line and a counter', async () => {
    expect((await rig.sync('acme')).outcome).toBe('succeeded');
    const workers = rig.worker?.workers ?? [];
    const wedged = workers.find((w) => w.name === rig.app.queues.sync.name);
    expect(wedged).toBeDefined();
    await wedged!.close();

    rig.memory.get('acme').upsert('contacts', { id: 'C2', updatedAt: '2026-11-02T00:00:00.000Z', name: 'Najd Logistics', nameAr: 'نجد للخدمات اللوجستية' });
    const run = await rig.sync('acme');
    expect(run.outcome).toBe('succeeded');
    expect(run.counts['contacts.created']).toBe(1);
    expect(rig.sim.data('client-acme').contacts.map((c) => c.extPlatformId).sort()).toEqual(['C1', 'C2']);

    // The wedged worker left the list; one new sync worker took its place.
    expect(workers).not.toContain(wedged);
    expect(workers.filter((w) => w.name === rig.app.queues.sync.name)).toHaveLength(1);
    const heal = rig.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => String(l['msg']).startsWith('worker wedged'));
    expect(heal, rig.logs.join('')).toMatchObject({ level: 40, queue: rig.app.queues.sync.name, reason: 'wedged' });
    expect(String(heal?.['why'])).toMatch(/waiting/);
    const counted = (await rig.metrics.workerReplacements.get()).values.find((v) => v.labels['queue'] === rig.app.queues.sync.name);
    expect(counted?.value).toBe(1);
  }, 60_000);
});
