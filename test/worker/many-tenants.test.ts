/**
 * What a worker holding many tenants relies on (issue 40): a restart with the tenants unchanged writes no scheduler,
 * and a tenant idle for TENANT_IDLE_S holds no client, adapter or token provider (made again at its next run), never
 * while one of its jobs runs. Real Redis, the simulator over HTTP; the figures themselves are the bench's `tenants`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { reconcileOffsetMs } from '../../src/queues/schedulers.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const TENANTS = ['acme', 'beta', 'gamma'].map((id) => ({ id, platform: { kind: 'memory' } }));

const DAY = 86_400_000;
/** The first reconcile slot of a tenant at or after `at`'s day (its offset into the day). */
const slotOf = (tenant: string, at: number): number => Math.floor(at / DAY) * DAY + reconcileOffsetMs(tenant, DAY);

/** Schedulers written, from the worker's 'schedulers in place' lines. */
function schedulerWrites(logs: string[]): number {
  return logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter((line) => line.includes('"schedulers in place"'))
    .reduce((n, line) => n + Number((JSON.parse(line) as { upserted: number }).upserted), 0);
}

describe('a worker with many tenants', () => {
  const redis = useTestRedis();
  let rig: Rig | undefined;
  let sim: Simulator | undefined;
  afterEach(async () => {
    await rig?.close();
    await sim?.close();
    rig = sim = undefined;
  });

  it('a restart with the tenants unchanged writes no scheduler', async () => {
    sim = await startSimulator({ clients: TENANTS.map((t) => ({ clientId: `client-${t.id}`, clientSecret: `secret-${t.id}-x9` })) });
    const env = { KEY_PREFIX: testPrefix('restart') };
    rig = await startRig({ redisUrl: redis.url, tenants: TENANTS, sim, env, worker: { schedules: true } });
    // Two ticks a tenant, a refresh a client, the housekeeping pass.
    expect(schedulerWrites(rig.logs)).toBe(TENANTS.length * 3 + 1);
    // The reconcile passes (every day) fall at each tenant's own offset, not all at the start beside the first runs.
    const reconcile = (await rig.app.queues.schedule.getJobSchedulers(0, -1)).filter((s) => s.key.endsWith('.reconcile'));
    expect(reconcile).toHaveLength(TENANTS.length);
    for (const s of reconcile) expect(s.next).toBe(slotOf(s.key.split('.')[1] ?? '', s.next ?? 0));
    await rig.close();
    rig = await startRig({ redisUrl: redis.url, tenants: TENANTS, sim, env, worker: { schedules: true } });
    expect(rig.logs.join('')).toContain('"schedulers in place"');
    expect(schedulerWrites(rig.logs)).toBe(0);
  });

  it('a tenant idle for TENANT_IDLE_S holds no client, adapter or token provider; made again at its next run; never dropped while a job holds it', async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: TENANTS, env: { TENANT_IDLE_S: '60' } });
    const { app } = rig;
    expect(app.tenantObjects()).toEqual({ clients: 0, adapters: 0, providers: 0 });
    expect((await rig.sync('acme')).outcome).toBe('succeeded');
    expect((await rig.sync('beta')).outcome).toBe('succeeded');
    expect(app.tenantObjects()).toEqual({ clients: 2, adapters: 2, providers: 2 });
    // Not idle yet.
    expect(app.dropIdle(Date.now() + 30_000)).toEqual([]);
    // A job of acme holds it past its idle period; beta goes.
    const release = app.hold('acme');
    expect(app.dropIdle(Date.now() + 61_000)).toEqual(['beta']);
    expect(app.tenantObjects()).toEqual({ clients: 1, adapters: 1, providers: 1 });
    release();
    expect(app.dropIdle(Date.now() + 61_000)).toEqual(['acme']);
    expect(app.tenantObjects()).toEqual({ clients: 0, adapters: 0, providers: 0 });
    // Its next run makes them again, and syncs.
    expect((await rig.sync('beta')).outcome).toBe('succeeded');
    expect(app.tenantObjects()).toEqual({ clients: 1, adapters: 1, providers: 1 });
  });
});
