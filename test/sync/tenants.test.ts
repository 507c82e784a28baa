/**
 * Two tenants in one worker: isolated data, and a large backfill does not hold back a small tenant's run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryPlatformRegistry } from '../../src/platforms/memory/index.js';
import { requestSync } from '../../src/queues/index.js';
import { waitForRun } from '../../src/state/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('two tenants in one worker', () => {
  const redis = useTestRedis();
  let rig: Rig;
  const memory = new MemoryPlatformRegistry();
  const big = sampleData({ contacts: 1500, seed: 1, idPrefix: 'B', today: new Date('2026-11-20T00:00:00Z') });
  const small = sampleData({ contacts: 20, seed: 2, idPrefix: 'S', today: new Date('2026-11-20T00:00:00Z') });

  beforeAll(async () => {
    for (const [name, data] of [['big', big], ['small', small]] as const) {
      const store = memory.get(name);
      store.upsertMany('contacts', data.contacts);
      store.upsertMany('invoices', data.invoices);
      store.upsertMany('payments', data.payments);
    }
    rig = await startRig({
      redisUrl: redis.url,
      memory,
      tenants: [
        { id: 'big', platform: { kind: 'memory', name: 'big' } },
        { id: 'small', platform: { kind: 'memory', name: 'small' } },
      ],
      simulator: { faults: { latencyMs: 5 } },
      env: { SYNC_CONCURRENCY: '4', SYNC_PAGE_SIZE: '100' },
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('keeps data apart and lets the small tenant finish while the big one backfills', async () => {
    const bigReq = await requestSync(rig.app.queues.sync, 'big', 'full', { trigger: 'test' });
    await new Promise((r) => setTimeout(r, 300));
    const smallReq = await requestSync(rig.app.queues.sync, 'small', 'incremental', { trigger: 'test' });
    const smallRun = await waitForRun(rig.app.stores.runs, 'small', { mode: 'incremental', requestedAt: smallReq.requestedAt, timeoutMs: 120_000 });
    const bigAtThatMoment = (await rig.app.stores.runs.recent('big', 1))[0];
    expect(smallRun.outcome).toBe('succeeded');
    expect(bigAtThatMoment?.outcome, 'the big backfill was still running when the small run ended').toBeUndefined();
    const bigRun = await waitForRun(rig.app.stores.runs, 'big', { mode: 'full', requestedAt: bigReq.requestedAt, timeoutMs: 180_000 });
    expect(bigRun.outcome).toBe('succeeded');

    const bigData = rig.sim.data('client-big');
    const smallData = rig.sim.data('client-small');
    expect(bigData.contacts).toHaveLength(big.contacts.length);
    expect(smallData.contacts).toHaveLength(small.contacts.length);
    expect(bigData.contacts.every((c) => c.extPlatformId?.startsWith('B'))).toBe(true);
    expect(smallData.contacts.every((c) => c.extPlatformId?.startsWith('S'))).toBe(true);
  });

  it('never runs two runs of one tenant side by side', async () => {
    const a = await requestSync(rig.app.queues.sync, 'small', 'full', { trigger: 'test' });
    const b = await requestSync(rig.app.queues.sync, 'small', 'incremental', { trigger: 'test' });
    const runA = await waitForRun(rig.app.stores.runs, 'small', { mode: 'full', requestedAt: a.requestedAt, timeoutMs: 60_000 });
    const runB = await waitForRun(rig.app.stores.runs, 'small', { mode: 'incremental', requestedAt: b.requestedAt, timeoutMs: 60_000 });
    const [first, second] = [runA, runB].sort((x, y) => x.startedAt - y.startedAt);
    expect(second!.startedAt).toBeGreaterThanOrEqual(first!.finishedAt!);
  });
});
