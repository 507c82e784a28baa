/**
 * Bounds on growth (issue 17): housekeeping drops dead letters last tried more than DEAD_LETTER_MAX_AGE_DAYS ago (a
 * record gone from the source is never tried again) and unknown call outcomes whose campaign has expired. It is a
 * job of the schedule queue made by one job scheduler for the whole fleet (decision 0130): one pass per interval
 * however many worker processes run, not one per process.
 */
import type { Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CampaignStore } from '../../src/calls/index.js';
import { campaignKey } from '../../src/redis/keys.js';
import { startWorker } from '../../src/worker.js';
import { startTestRedis, testPrefix, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The housekeeping passes that have run on this app's Redis and prefix (completed jobs of the schedule queue). */
async function passes(rig: Rig): Promise<Job[]> {
  const jobs = await rig.app.queues.schedule.getJobs(['completed', 'failed', 'active'], 0, -1);
  return jobs.filter((j) => j.name === 'housekeeping');
}

describe('housekeeping', () => {
  let redis: TestRedis;
  let rig: Rig;

  beforeAll(async () => {
    redis = await startTestRedis();
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory' } }], worker: false, env: { DEAD_LETTER_MAX_AGE_DAYS: '30' } });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
  });

  it('drops expired dead letters and the unknown outcomes of expired campaigns, and keeps the rest', async () => {
    const { app } = rig;
    const base = { reason: 'rejected', code: 'COLLECTIONS_REJECTED', runId: 'run-1' };
    const now = Date.now();
    await app.stores.deadLetters.add('acme', [
      { ...base, entity: 'invoices', platformId: 'gone-from-source', at: now - 31 * DAY },
      { ...base, entity: 'contacts', place: 'contacts.ndjson:9', at: now - 45 * DAY },
      { ...base, entity: 'invoices', platformId: 'still-failing', at: now - 29 * DAY },
    ]);
    const campaigns = new CampaignStore(app.redis, app.env.KEY_PREFIX);
    await campaigns.addUnknown('acme', 'expired-campaign', ['+966500000001', '+966500000002']);
    await campaigns.addUnknown('acme', 'live-campaign', ['+966500000003']);
    // The live campaign's record exists; the expired one's is gone (its keys lapsed with the retention).
    await app.redis.set(campaignKey(app.env.KEY_PREFIX, 'live-campaign', ['calls', 'c']), '{}');

    // The first start of a fleet puts the scheduler in place, and its first pass runs at once.
    const worker = await startWorker(app, { opsPort: 0, schedules: true, queues: ['schedule'] });
    try {
      while ((await app.stores.deadLetters.count('acme')) > 1 || (await campaigns.countUnknown('acme')) > 1) await sleep(50);
      expect((await app.stores.deadLetters.list('acme')).map((e) => e.key)).toEqual(['invoices:id:still-failing']);
      expect([...(await campaigns.unknownOf('acme')).keys()]).toEqual(['live-campaign']);
      expect(rig.logs.join('')).toMatch(/"deadLetters":2,"unknownOutcomes":2,"webhookEvents":0,"msg":"housekeeping: dropped expired entries"/);
    } finally {
      await worker.close(5_000);
    }
  });

  it('runs once per interval for the fleet, however many worker processes run', async () => {
    const prefix = testPrefix('fleet');
    const tenants = [{ id: 'acme', platform: { kind: 'memory' } }];
    const everyMs = 1_000;
    // Two worker processes on one Redis and prefix (two Apps: their own connections, queues and BullMQ workers).
    const worker = { schedules: true, queues: ['schedule' as const], housekeepingEveryMs: everyMs };
    const one = await startRig({ redisUrl: redis.url, tenants, env: { KEY_PREFIX: prefix }, worker });
    const two = await startRig({ redisUrl: redis.url, tenants, env: { KEY_PREFIX: prefix }, worker, sim: one.sim });
    const since = Date.now();
    try {
      await sleep(4_500);
      const elapsedSlots = Math.floor(Date.now() / everyMs) - Math.floor(since / everyMs);
      const ran = await passes(one);
      // One pass per slot (plus the first, at once when the scheduler is created), never one per process.
      expect(ran.length).toBeGreaterThanOrEqual(elapsedSlots - 1);
      expect(ran.length).toBeLessThanOrEqual(elapsedSlots + 1);
      expect(new Set(ran.map((j) => j.id)).size).toBe(ran.length);
      expect((await one.app.queues.schedule.getJobSchedulers(0, -1)).filter((s) => s.name === 'housekeeping').map((s) => s.every)).toEqual([everyMs]);
    } finally {
      await two.close();
      await one.close();
    }
  });

  it('adds no pass when a worker restarts within the interval', async () => {
    const restarted = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory' } }],
      worker: { schedules: true, queues: ['schedule'] },
    });
    try {
      for (let i = 0; i < 200 && (await passes(restarted)).length < 1; i += 1) await sleep(50);
      expect(await passes(restarted)).toHaveLength(1);
      await restarted.worker!.close(5_000);
      const again = await startWorker(restarted.app, { opsPort: 0, schedules: true, queues: ['schedule'] });
      await sleep(1_000);
      await again.close(5_000);
      expect(await passes(restarted)).toHaveLength(1);
    } finally {
      await restarted.close();
    }
  });

  it('keeps RUNS_KEPT runs per tenant', async () => {
    const kept = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'lean', platform: { kind: 'memory' } }],
      env: { KEY_PREFIX: '{kept}', RUNS_KEPT: '2' },
    });
    try {
      for (let i = 0; i < 3; i += 1) expect((await kept.sync('lean', 'full')).outcome).toBe('succeeded');
      expect(await kept.app.stores.runs.recent('lean', 10)).toHaveLength(2);
    } finally {
      await kept.close();
    }
  });
});
