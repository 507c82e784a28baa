/**
 * Issue 13 item 5: a call campaign on a three-master Redis Cluster (REDIS_CLUSTER_NODES): synced from a memory
 * tenant, the intended contacts called once, a second campaign within the cooldown calls nobody. The campaign's
 * keys and its tenant's keys are two hash tags (decision 35): nothing may join them in one script or MULTI.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallStores, newCampaignId, waitForCampaign, type CallStores, type CampaignReport } from '../../src/calls/index.js';
import { enqueueCampaign } from '../../src/queues/index.js';
import { AS_OF, callRequests, CONTACTS, INVOICES, NUMBERS } from '../calls/fixtures.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { startRig, type Rig } from '../helpers/rig.js';

const criteria = { overdueDays: 30, minAmount: 100, asOf: AS_OF };

describe('a call campaign on a Redis Cluster', () => {
  let cluster: TestCluster;
  let rig: Rig;
  let calls: CallStores;

  async function run(): Promise<CampaignReport> {
    const campaignId = newCampaignId('cmp');
    await enqueueCampaign(rig.app.queues.calls, calls.store, { tenantId: 'acme', campaignId, requestedAt: Date.now(), overrides: {}, dryRun: false, source: { kind: 'overdue', criteria } });
    await waitForCampaign(calls.store, campaignId, { timeoutMs: 60_000, pollMs: 50 });
    return (await calls.store.report(campaignId))!;
  }

  beforeAll(async () => {
    cluster = await startTestCluster();
    rig = await startRig({
      redisUrl: 'redis://127.0.0.1:1',
      env: { REDIS_CLUSTER_NODES: cluster.nodes },
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme-calls' }, extra: { calls: { defaultRegion: 'SA', requestSize: 2 } } }],
      logLevel: 'warn',
    });
    const platform = rig.memory.get('acme-calls');
    platform.upsertMany('contacts', CONTACTS);
    platform.upsertMany('invoices', INVOICES);
    expect((await rig.sync('acme')).outcome).toBe('succeeded');
    // As in test/calls/campaign.test.ts: a collector turned reminders off for C-06.
    const c06 = rig.sim.data('client-acme').contacts.find((c) => c.extPlatformId === 'C-06')!.uuid;
    await rig.app.clientFor(rig.app.tenant('acme')!).updateContact({ uuid: c06, remindersEnabled: false });
    calls = createCallStores(rig.app.redis, rig.env.KEY_PREFIX, { cooldownMs: rig.env.CALL_COOLDOWN_HOURS * 3_600_000 });
  }, 90_000);
  afterAll(async () => {
    await rig?.close();
    await cluster?.stop();
  });

  it('calls the intended contacts once; a second campaign within the cooldown calls nobody', async () => {
    const first = await run();
    expect(first.campaign.status).toBe('done');
    expect(first.counts).toMatchObject({ called: 2, unknown: 0, failed: 0 });
    expect(rig.sim.data('client-acme').calls.map((c) => c.numberToCall).sort()).toEqual([NUMBERS.noor, NUMBERS.gulf].sort());
    const before = callRequests(rig.sim);
    const again = await run();
    expect(again.counts).toMatchObject({ called: 0, cooldown: 2 });
    expect(callRequests(rig.sim)).toBe(before);
    expect((await calls.store.recent('acme')).map((c) => c.id).sort()).toEqual([first.campaign.id, again.campaign.id].sort());
  }, 120_000);
});
