/**
 * The refresh-token job module and the schedules: payloads are parsed first (stale or secret-bearing data fails
 * loudly), credentials come only from the resolver, and the per-client schedulers follow the tenants list.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createRefreshTokenProcessor } from '../../jobs/refresh-token.js';
import { Secret } from '../../src/secret.js';
import { authClientKey, authKeys, type ClientCredentials, type RotateOptions } from '../../src/auth/index.js';
import { ensureRefreshSchedules, jobId, JOBS } from '../../src/queues/index.js';
import { refreshId } from '../../src/queues/jobs.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';
import { buildRig, NO_AUTH_URL, quietLogger } from './harness.js';

const C1 = authClientKey(NO_AUTH_URL, 'c1');

const redis = useTestRedis();
const job = (data: unknown): Job => ({ id: 'j1', name: JOBS.refresh.name, data }) as unknown as Job;

describe('refresh-token processor', () => {
  const calls: Array<{ clientKey: string; credentials: ClientCredentials; opts: RotateOptions }> = [];
  const refresher = {
    rotate: async (clientKey: string, credentials: ClientCredentials, opts: RotateOptions) => {
      calls.push({ clientKey, credentials, opts });
      return { outcome: 'skipped' as const, why: 'fresh' as const, version: 3 };
    },
  };
  const tenants: Record<string, ClientCredentials> = {
    t1: { clientId: 'c1', clientSecret: new Secret('s1'), authUrl: NO_AUTH_URL },
    t2: { clientId: 'c9', clientSecret: new Secret('s9'), authUrl: NO_AUTH_URL },
    // The same client id at another service: another client.
    t3: { clientId: 'c1', clientSecret: new Secret('s1'), authUrl: 'http://127.0.0.1:2' },
  };
  const resolve = (id: string): ClientCredentials | undefined => tenants[id];
  const processor = createRefreshTokenProcessor({ refresher, resolveCredentials: resolve, logger: quietLogger() });

  it('rotates with the credentials of the tenants file and the reason and version of the job', async () => {
    calls.length = 0;
    const out = await processor(job({ clientKey: C1, tenantId: 't1', reason: '401', seenVersion: 3 }));
    expect(out).toEqual({ outcome: 'skipped', why: 'fresh', version: 3 });
    expect(calls.length).toBe(1);
    expect(calls[0]!.clientKey).toBe(C1);
    expect(calls[0]!.opts).toEqual({ reason: '401', seenVersion: 3, tenantId: 't1' });
    expect(calls[0]!.credentials.clientSecret.reveal()).toBe('s1');
  });

  it('fails a stale or secret-bearing payload, an unknown tenant and a changed client as unrecoverable', async () => {
    calls.length = 0;
    for (const data of [
      { clientKey: C1, tenantId: 't1' },
      { clientKey: C1, tenantId: 't1', reason: 'soon' },
      { clientKey: C1, tenantId: 't1', reason: 'manual', clientSecret: 's1' },
      { clientKey: C1, tenantId: 'gone', reason: 'manual' },
      { clientKey: C1, tenantId: 't2', reason: 'manual' },
      { clientKey: C1, tenantId: 't3', reason: 'manual' },
      // A job of the old layout (the client id as its key) is stale.
      { clientKey: 'c1', tenantId: 't1', reason: 'manual' },
    ]) {
      await expect(processor(job(data))).rejects.toBeInstanceOf(UnrecoverableError);
    }
    expect(calls).toEqual([]);
    expect(JOBS.refresh.schema.safeParse({ clientKey: 'c1', tenantId: 't1', reason: 'scheduled' }).success).toBe(true);
  });
});

describe('refresh job ids (issue 17)', () => {
  it('are injective: clients a:b and a_b get one scheduler each, and so do their tenants', async () => {
    const prefix = testPrefix('sched');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const rig = await buildRig({ url: redis.url, prefix, settings: {} });
    onTestFinished(() => rig.close());
    expect(refreshId('a:b')).not.toBe(refreshId('a_b'));
    expect(jobId('a', 'b.c')).not.toBe(jobId('a.b', 'c'));
    expect(jobId('12')).not.toMatch(/^\d+$/);
    expect(jobId('12')).not.toBe(jobId('j', '12'));
    expect(jobId('a:b')).not.toContain(':');
    // The ids as they are, and the schedules auth keeps for two tenants with those client ids.
    await ensureRefreshSchedules(rig.queue, [{ clientKey: 'a:b', tenantId: 't1' }, { clientKey: 'a_b', tenantId: 't2' }], 30_000);
    const data = (await rig.queue.getJobSchedulers()).map((s) => s.template?.data as unknown);
    expect(data).toHaveLength(2);
    expect(data).toEqual(
      expect.arrayContaining([
        { clientKey: 'a:b', tenantId: 't1', reason: 'scheduled' },
        { clientKey: 'a_b', tenantId: 't2', reason: 'scheduled' },
      ]),
    );
    const tenants = [
      { id: 't1', collections: { clientId: 'a:b', clientSecret: new Secret('s') } },
      { id: 't2', collections: { clientId: 'a_b', clientSecret: new Secret('s') } },
    ];
    const { upserted } = await rig.auth.ensureSchedules(tenants);
    expect(new Set(upserted).size).toBe(2);
    expect((await rig.queue.getJobSchedulers()).map((s) => (s.template?.data as { clientKey: string }).clientKey).sort()).toEqual(tenants.map((t) => rig.auth.clientKeyOf(t)).sort());
  });
});

describe('ensureRefreshSchedules', () => {
  it('keeps exactly one scheduler per client listed, and removes those of clients gone', async () => {
    const prefix = testPrefix('sched');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const rig = await buildRig({ url: redis.url, prefix, settings: {} });
    onTestFinished(() => rig.close());
    const both = [
      { clientKey: 'c1', tenantId: 't1' },
      { clientKey: 'c1', tenantId: 't1b' },
      { clientKey: 'c2', tenantId: 't2' },
    ];
    await ensureRefreshSchedules(rig.queue, both, 30_000);
    await ensureRefreshSchedules(rig.queue, both, 30_000);
    const first = await rig.queue.getJobSchedulers();
    expect(first.map((s) => [s.key, s.every]).sort()).toEqual([['refresh.c1', 30_000], ['refresh.c2', 30_000]]);
    expect(first.find((s) => s.key === 'refresh.c1')?.template?.data).toEqual({ clientKey: 'c1', tenantId: 't1', reason: 'scheduled' });

    const res = await ensureRefreshSchedules(rig.queue, [{ clientKey: 'c2', tenantId: 't2' }], 20_000);
    expect(res.removed).toEqual(['refresh.c1']);
    const after = await rig.queue.getJobSchedulers();
    expect(after.map((s) => [s.key, s.every])).toEqual([['refresh.c2', 20_000]]);
  });
});

describe('the refresh schedulers of many clients (issue 40)', () => {
  it('each ticks at an offset of its own in the interval, none at once, the same offset at every upsert', async () => {
    const prefix = testPrefix('sched');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const rig = await buildRig({ url: redis.url, prefix, settings: {} });
    onTestFinished(() => rig.close());
    const clients = Array.from({ length: 40 }, (_, i) => ({ clientKey: `c${i}`, tenantId: `t${i}` }));
    const before = Date.now();
    await ensureRefreshSchedules(rig.queue, clients, 60_000);
    const placed = await rig.queue.getJobSchedulers(0, -1);
    expect(placed).toHaveLength(40);
    const nexts = placed.map((s) => s.next ?? 0);
    // Not all at the start: spread over the interval.
    expect(nexts.filter((n) => n - before < 1_000).length).toBeLessThan(5);
    expect(Math.max(...nexts) - Math.min(...nexts)).toBeGreaterThan(30_000);
    for (const n of nexts) expect(n - before).toBeLessThanOrEqual(61_000);
    // Unchanged clients: nothing written again.
    expect(await ensureRefreshSchedules(rig.queue, clients, 60_000)).toMatchObject({ upserted: [], unchanged: 40 });
  });
});

describe('applyTenants (issue 17, growth)', () => {
  it('deletes the token state and the schedulers of clients no longer in the tenants file, and keeps the rest', async () => {
    const prefix = testPrefix('gone');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const rig = await buildRig({ url: redis.url, prefix, settings: {} });
    onTestFinished(() => rig.close());
    const t1 = { id: 't1', collections: { clientId: 'c1', clientSecret: new Secret('s1') } };
    const t2 = { id: 't2', collections: { clientId: 'c2', clientSecret: new Secret('s2') } };
    const state = async (t: typeof t1): Promise<string[]> => {
      const k = authKeys(prefix, rig.auth.clientKeyOf(t));
      return (await Promise.all([k.token, k.failure, k.leases].map(async (key) => ((await rig.redis.exists(key)) === 1 ? key : undefined)))).filter((x) => x !== undefined);
    };
    for (const t of [t1, t2]) {
      const k = authKeys(prefix, rig.auth.clientKeyOf(t));
      await rig.redis.hset(k.token, 'token', 'tok', 'version', 1, 'expiresAt', Date.now() + 60_000);
      await rig.redis.hset(k.failure, 'reason', 'refused', 'failures', 1);
      await rig.redis.zadd(k.leases, Date.now() + 60_000, 'l1');
    }
    // A token of the old layout (the bare client id as its key) is of no client in the file either.
    const old = authKeys(prefix, 'c1').token;
    await rig.redis.hset(old, 'token', 'tok', 'version', 3);
    const other = `${prefix}:xero:org-1:oauth`;
    await rig.redis.set(other, 'kept');

    expect((await rig.auth.applyTenants([t1, t2])).dropped).toEqual(['c1']);
    expect((await rig.queue.getJobSchedulers()).length).toBe(2);
    const r = await rig.auth.applyTenants([t1]);
    expect(r.dropped).toEqual([rig.auth.clientKeyOf(t2)]);
    expect(r.removed).toEqual([refreshId(rig.auth.clientKeyOf(t2))]);
    expect(await state(t2)).toEqual([]);
    expect((await state(t1)).length).toBe(3);
    expect(await rig.redis.exists(old)).toBe(0);
    expect(await rig.redis.get(other)).toBe('kept');
    expect((await rig.queue.getJobSchedulers()).map((s) => s.key)).toEqual([refreshId(rig.auth.clientKeyOf(t1))]);
  });
});
