/**
 * The one upsert-and-prune of schedulers (src/queues/schedulers.ts) against BullMQ 6 on a real Redis: a
 * scheduler's id comes back as `key` (not `id`, a leftover of v5's repeatable jobs), a prune removes only
 * the schedulers of its own job, and processes calling it at once share the shards, each written by one of them.
 */
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ensureRefreshSchedules, ensureSchedulers, QUEUES } from '../../src/queues/index.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';

describe('ensureSchedulers', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));
  const queue = (name: string, prefix = testPrefix('sched')): Queue => {
    const q = new Queue(name, { connection: redis, prefix });
    onTestFinished(async () => {
      await q.obliterate({ force: true });
      await q.close();
    });
    return q;
  };

  it('reads a scheduler id from `key`, the field BullMQ 6 fills (and `id` stays empty)', async () => {
    const q = queue(QUEUES.refreshToken);
    await ensureRefreshSchedules(q, [{ clientKey: 'c1', tenantId: 't1' }], 60_000);
    const [s] = await q.getJobSchedulers(0, -1);
    expect(s?.key).toBe('refresh.c1');
    expect(s?.id).toBeUndefined();
    expect(await q.getJobScheduler('refresh.c1')).toMatchObject({ key: 'refresh.c1', every: 60_000, name: 'refresh-token' });
    // What the prune found by `key` is what removeJobScheduler takes.
    expect(await ensureRefreshSchedules(q, [], 60_000)).toEqual({ upserted: [], removed: ['refresh.c1'], unchanged: 0 });
    expect(await q.getJobSchedulers(0, -1)).toEqual([]);
  });

  it('prunes only the schedulers of its own job, and upserts one per id', async () => {
    const q = queue(QUEUES.schedule);
    await q.upsertJobScheduler('someone-elses', { every: 60_000 }, { name: 'another-job', data: {} });
    const wanted = [
      { data: { tenantId: 'acme', mode: 'incremental' as const }, repeat: { every: 30_000 } },
      { data: { tenantId: 'acme', mode: 'incremental' as const }, repeat: { every: 45_000 } },
      { data: { tenantId: 'acme', mode: 'reconcile' as const }, repeat: { every: 86_400_000 } },
    ];
    expect(await ensureSchedulers(q, 'tick', wanted)).toEqual({ upserted: ['tick.acme.incremental', 'tick.acme.reconcile'], removed: [], unchanged: 0 });
    expect((await q.getJobScheduler('tick.acme.incremental'))?.every).toBe(30_000);
    expect(await ensureSchedulers(q, 'tick', [])).toEqual({ upserted: [], removed: expect.arrayContaining(['tick.acme.incremental', 'tick.acme.reconcile']) as unknown, unchanged: 0 });
    expect((await q.getJobSchedulers(0, -1)).map((s) => s.key)).toEqual(['someone-elses']);
  });

  it('writes nothing for schedulers already in place: only a changed or missing one is upserted', async () => {
    const q = queue(QUEUES.schedule);
    const tick = (tenantId: string, every: number) => [
      { data: { tenantId, mode: 'incremental' as const }, repeat: { every } },
      { data: { tenantId, mode: 'reconcile' as const }, repeat: { pattern: '0 3 * * *', tz: 'Asia/Riyadh' } },
    ];
    expect((await ensureSchedulers(q, 'tick', [...tick('acme', 60_000), ...tick('zeta', 60_000)])).upserted).toHaveLength(4);
    const before = await q.getJobSchedulers(0, -1);
    // The same again: nothing written (every scheduler's next job stays the one it had).
    expect(await ensureSchedulers(q, 'tick', [...tick('acme', 60_000), ...tick('zeta', 60_000)])).toEqual({ upserted: [], removed: [], unchanged: 4 });
    expect(await q.getJobSchedulers(0, -1)).toEqual(before);
    // One interval changed, one tenant gone, one new: only those are touched.
    expect(await ensureSchedulers(q, 'tick', [...tick('acme', 30_000), ...tick('omar', 60_000)])).toEqual({
      upserted: ['tick.acme.incremental', 'tick.omar.incremental', 'tick.omar.reconcile'],
      removed: expect.arrayContaining(['tick.zeta.incremental', 'tick.zeta.reconcile']) as unknown,
      unchanged: 1,
    });
    expect((await q.getJobScheduler('tick.acme.incremental'))?.every).toBe(30_000);
    // A scheduler gone, and one whose next job is gone (it stopped: bullmq #3381), are put in place again.
    await q.removeJobScheduler('tick.omar.reconcile');
    const acme = await q.getJobScheduler('tick.acme.incremental');
    const lost = `repeat:tick.acme.incremental:${String(acme?.next)}`;
    await redis.zrem(q.toKey('delayed'), lost);
    await redis.lrem(q.toKey('wait'), 0, lost);
    await redis.zrem(q.toKey('prioritized'), lost);
    expect(await redis.del(q.toKey(lost))).toBe(1);
    expect(await q.getJobState(lost)).toBe('unknown');
    expect((await ensureSchedulers(q, 'tick', [...tick('acme', 30_000), ...tick('omar', 60_000)])).upserted.sort()).toEqual(['tick.acme.incremental', 'tick.omar.reconcile']);
  });

  it('reads no scheduler back when the wanted set is the one last put in place; a half-done start leaves no shortcut', async () => {
    const q = queue(QUEUES.schedule);
    const wanted = ['acme', 'zeta', 'omar'].map((tenantId) => ({ data: { tenantId, mode: 'incremental' as const }, repeat: { every: 60_000 } }));
    expect((await ensureSchedulers(q, 'tick', wanted)).upserted).toHaveLength(3);
    // Every command the next two calls send, seen by Redis (MONITOR), on this queue's keys.
    const monitor = await redis.monitor();
    monitor.on('error', () => undefined);
    const seen: string[] = [];
    monitor.on('monitor', (_t: string, args: string[]) => {
      if (args.some((a) => a.includes(q.toKey('')))) seen.push(args.map((a) => a.replace(q.toKey(''), '')).join(' '));
    });
    onTestFinished(() => void monitor.disconnect());
    await new Promise((r) => setTimeout(r, 50));
    expect(await ensureSchedulers(q, 'tick', wanted)).toEqual({ upserted: [], removed: [], unchanged: 3 });
    // A scheduler gone and one stopped (its next job gone: bullmq #3381) are put back on the short way too.
    await q.removeJobScheduler('tick.zeta.incremental');
    const acme = await q.getJobScheduler('tick.acme.incremental');
    const lost = `repeat:tick.acme.incremental:${String(acme?.next)}`;
    await redis.zrem(q.toKey('delayed'), lost);
    await redis.lrem(q.toKey('wait'), 0, lost);
    await redis.del(q.toKey(lost));
    seen.length = 0;
    expect((await ensureSchedulers(q, 'tick', wanted)).upserted.sort()).toEqual(['tick.acme.incremental', 'tick.zeta.incremental']);
    await new Promise((r) => setTimeout(r, 50));
    // No scheduler's hash read (getJobSchedulers reads each with HGETALL), nothing removed: only the wanted ids'
    // next times (ZMSCORE), never the whole index.
    expect(seen.filter((c) => /^hgetall /i.test(c))).toEqual([]);
    expect(seen.filter((c) => /^zrange repeat /i.test(c))).toEqual([]);
    expect(seen.some((c) => /^zmscore repeat tick\.acme\.incremental/i.test(c))).toBe(true);
    expect((await q.getJobSchedulers(0, -1)).map((s) => s.key).sort()).toEqual(['tick.acme.incremental', 'tick.omar.incremental', 'tick.zeta.incremental']);
    // A change goes the long way and drops the digest before its first write: a start that died half-way (digest
    // gone, a scheduler changed) reads everything back next time and puts the changed one right again.
    await ensureSchedulers(q, 'tick', wanted.slice(0, 2));
    expect(await q.getJobScheduler('tick.omar.incremental')).toBeUndefined();
    await q.upsertJobScheduler('tick.acme.incremental', { every: 5_000 }, { name: 'schedule-tick', data: { tenantId: 'acme', mode: 'incremental' } });
    await redis.del(q.toKey('schedulers-digests:schedule-tick'));
    expect((await ensureSchedulers(q, 'tick', wanted.slice(0, 2))).upserted).toEqual(['tick.acme.incremental']);
    expect((await q.getJobScheduler('tick.acme.incremental'))?.every).toBe(60_000);
  });

  it('refuses data its job would refuse, before touching the queue', async () => {
    const q = queue(QUEUES.schedule);
    await expect(ensureSchedulers(q, 'tick', [{ data: { tenantId: 'no spaces allowed', mode: 'incremental' }, repeat: { every: 1_000 } }])).rejects.toThrow(/invalid schedule-tick job data: tenantId/);
    expect(await q.getJobSchedulers(0, -1)).toEqual([]);
  });

  it('processes calling it at once share the writing: each shard is written by one of them, every scheduler once', { timeout: 60_000 }, async () => {
    // Two processes' connections: a queue each, on the same keys.
    const other = redis.duplicate();
    onTestFinished(() => void other.disconnect());
    const prefix = testPrefix('sched');
    const q = queue(QUEUES.schedule, prefix);
    const q2 = new Queue(QUEUES.schedule, { connection: other, prefix });
    onTestFinished(() => q2.close());
    // 12,000 schedulers: three shards of about 5,000.
    const tenants = Array.from({ length: 6_000 }, (_, i) => `t${String(i)}`);
    const wanted = tenants.flatMap((tenantId) => [
      { data: { tenantId, mode: 'incremental' as const }, repeat: { every: 900_000 } },
      { data: { tenantId, mode: 'reconcile' as const }, repeat: { every: 86_400_000 } },
    ]);
    const [a, b] = await Promise.all([ensureSchedulers(q, 'tick', wanted), ensureSchedulers(q2, 'tick', wanted)]);
    // Every scheduler written once, by one of the two; what one wrote the other found in place.
    expect(a.upserted.length + b.upserted.length).toBe(12_000);
    expect(new Set([...a.upserted, ...b.upserted]).size).toBe(12_000);
    expect(a.unchanged + a.upserted.length).toBe(12_000);
    expect(b.unchanged + b.upserted.length).toBe(12_000);
    expect(a.busy).toBeUndefined();
    expect(b.busy).toBeUndefined();
    // Each shard checked once between them: what one had just put in place the other did not read again.
    expect((a.checkedElsewhere ?? 0) + (b.checkedElsewhere ?? 0)).toBe(3);
    expect(await q.getJobSchedulersCount()).toBe(12_000);
    // One next job a scheduler: none made twice.
    expect(await q.getJobCountByTypes('wait', 'delayed', 'prioritized')).toBe(12_000);
    expect(await redis.hlen(q.toKey('schedulers-digests:schedule-tick'))).toBe(3);
    // A scheduler stopped since (its next job gone, bullmq #3381). A third process a moment later reads nothing (the
    // shards were checked just now, as it wants them); once the checks are older than the window, it looks and mends it.
    const third = redis.duplicate();
    onTestFinished(() => void third.disconnect());
    const q3 = new Queue(QUEUES.schedule, { connection: third, prefix });
    onTestFinished(() => q3.close());
    const stopped = (await q.getJobSchedulers(0, 0))[0]!;
    const lost = `repeat:${stopped.key}:${String(stopped.next)}`;
    await redis.zrem(q.toKey('delayed'), lost);
    await redis.lrem(q.toKey('wait'), 0, lost);
    expect(await redis.del(q.toKey(lost))).toBe(1);
    expect(await ensureSchedulers(q3, 'tick', wanted)).toMatchObject({ upserted: [], unchanged: 12_000, checkedElsewhere: 3 });
    const checked = q.toKey('schedulers-checked:schedule-tick');
    for (const [field, value] of Object.entries(await redis.hgetall(checked))) await redis.hset(checked, field, `${String(Date.now() - 31_000)} ${value.split(' ')[1]!}`);
    const aged = await ensureSchedulers(q3, 'tick', wanted);
    expect(aged.upserted).toEqual([stopped.key]);
    expect(aged.checkedElsewhere).toBeUndefined();
    expect(await q.getJobCountByTypes('wait', 'delayed', 'prioritized')).toBe(12_000);
    // A shard count that changes (2,000 tenants: one shard)
    // reads back what is there, writes nothing unchanged, prunes what is gone and keeps only the new count's digests.
    const fewer = wanted.slice(0, 4_000);
    const after = await ensureSchedulers(q, 'tick', fewer);
    expect(after).toMatchObject({ upserted: [], unchanged: 4_000 });
    expect(after.removed).toHaveLength(8_000);
    expect(await q.getJobSchedulersCount()).toBe(4_000);
    expect(await redis.hkeys(q.toKey('schedulers-digests:schedule-tick'))).toEqual(['0/1']);
  });

  it('waits for a shard another process holds, then checks it', async () => {
    const q = queue(QUEUES.refreshToken);
    const lock = q.toKey('schedulers-lock:refresh-token:0');
    // Another process holds the one shard; it lets go 300 ms later, having written nothing.
    expect(await redis.set(lock, 'someone-else', 'PX', 30_000, 'NX')).toBe('OK');
    setTimeout(() => void redis.del(lock), 300);
    expect(await ensureRefreshSchedules(q, [{ clientKey: 'c1', tenantId: 't1' }], 60_000)).toEqual({ upserted: ['refresh.c1'], removed: [], unchanged: 0 });
    expect(await redis.exists(lock)).toBe(0);
  });
});
