/**
 * Bounds on growth (issue 17): a worker drops dead letters last tried more than DEAD_LETTER_MAX_AGE_DAYS ago (a
 * record gone from the source is never tried again) and unknown call outcomes whose campaign has expired.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CampaignStore } from '../../src/calls/index.js';
import { campaignKey } from '../../src/redis/keys.js';
import { startWorker } from '../../src/worker.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const DAY = 86_400_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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

    const worker = await startWorker(app, { opsPort: 0, schedules: false });
    try {
      while ((await app.stores.deadLetters.count('acme')) > 1 || (await campaigns.countUnknown('acme')) > 1) await sleep(50);
      expect((await app.stores.deadLetters.list('acme')).map((e) => e.key)).toEqual(['invoices:id:still-failing']);
      expect([...(await campaigns.unknownOf('acme')).keys()]).toEqual(['live-campaign']);
      expect(rig.logs.join('')).toMatch(/"deadLetters":2,"unknownOutcomes":2,"webhookEvents":0,"msg":"housekeeping: dropped expired entries"/);
    } finally {
      await worker.close(5_000);
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
