/**
 * Schedules follow the tenants file: every tenant gets an incremental and a reconcile scheduler; a tick
 * enqueues a deduplicated sync run; a tenant removed from the file loses its schedulers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTenants } from '../../src/config/tenants.js';
import { MemoryPlatformRegistry } from '../../src/platforms/memory/index.js';
import { ensureTickSchedules } from '../../src/queues/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig, type TenantSpec } from '../helpers/rig.js';

describe('per-tenant schedules', () => {
  const redis = useTestRedis();
  let rig: Rig;
  const memory = new MemoryPlatformRegistry();
  const specs: TenantSpec[] = [
    { id: 'tick', platform: { kind: 'memory', name: 'tick' }, extra: { schedule: { every: '1s', reconcileEvery: '1h' } } },
    { id: 'cronny', platform: { kind: 'memory', name: 'cronny' }, extra: { schedule: { cron: '0 3 * * *', tz: 'Asia/Riyadh' } } },
  ];

  beforeAll(async () => {
    memory.get('tick').upsertMany('contacts', sampleData({ contacts: 5, seed: 9 }).contacts);
    rig = await startRig({ redisUrl: redis.url, memory, tenants: specs, worker: { schedules: true } });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('upserts an incremental and a reconcile scheduler per tenant, and ticks start runs', async () => {
    // The tenants' tick schedulers (the fleet's housekeeping scheduler shares the queue).
    const schedulers = (await rig.app.queues.schedule.getJobSchedulers(0, -1)).filter((s) => s.name === 'schedule-tick');
    const keys = schedulers.map((s) => s.key).sort();
    expect(keys).toEqual(['tick.cronny.incremental', 'tick.cronny.reconcile', 'tick.tick.incremental', 'tick.tick.reconcile']);
    expect(schedulers.find((s) => s.key === 'tick.cronny.incremental')?.pattern).toBe('0 3 * * *');
    let runs = await rig.app.stores.runs.recent('tick', 10);
    for (let i = 0; i < 100 && runs.filter((r) => r.trigger === 'schedule' && r.outcome === 'succeeded').length < 2; i += 1) {
      await new Promise((r) => setTimeout(r, 100));
      runs = await rig.app.stores.runs.recent('tick', 10);
    }
    const scheduled = runs.filter((r) => r.trigger === 'schedule' && r.outcome === 'succeeded');
    expect(scheduled.length).toBeGreaterThanOrEqual(2);
    expect(rig.sim.data('client-tick').contacts).toHaveLength(5);
    // A new tenant gets its first reconcile pass at once; its cron incremental waits for 03:00 Riyadh time.
    const cronRuns = await rig.app.stores.runs.recent('cronny', 10);
    expect(cronRuns.map((r) => r.mode)).toEqual(['reconcile']);
    // Upserting again (a worker boot, a tenants-file change) does not start another run.
    await ensureTickSchedules(rig.app.queues.schedule, rig.app.tenants(), rig.app.logger);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await rig.app.stores.runs.recent('cronny', 10)).toHaveLength(1);
  });

  it('removes the schedulers of a tenant no longer in the tenants file', async () => {
    const file = parseTenants(tenantsJson([specs[1]!]), {});
    rig.app.setTenants(file);
    await ensureTickSchedules(rig.app.queues.schedule, rig.app.tenants(), rig.app.logger);
    const keys = (await rig.app.queues.schedule.getJobSchedulers(0, -1)).filter((s) => s.name === 'schedule-tick').map((s) => s.key).sort();
    expect(keys).toEqual(['tick.cronny.incremental', 'tick.cronny.reconcile']);
  });
});
