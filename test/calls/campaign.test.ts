/**
 * Campaigns end to end: a synced memory tenant, the simulator, the real worker. Who is called (once, with
 * the right tags and metadata), who is left out and why, the cooldown across campaigns, commit-then-drop
 * faults (unknown, never re-sent, also when the job runs again), definite failures, confirm/release,
 * cancellation, dry runs and single calls.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallStores, newCampaignId, parseCallList, resolveUnknown, waitForCampaign, type CallStores, type CampaignReport } from '../../src/calls/index.js';
import { enqueueCampaign, enqueueSingleCall, JOBS } from '../../src/queues/index.js';
import { DEFAULT_TEMPLATE } from '../../src/simulator/index.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { AS_OF, callRequests, CONTACTS, INVOICES, NUMBERS, SKIPPED } from './fixtures.js';

const CLIENT = 'client-acme';
const BULK = 'POST /ai/phone-calls/action/call-bulk';
const criteria = { overdueDays: 30, minAmount: 100, asOf: AS_OF };

describe('call campaigns against the simulator', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let calls: CallStores;
  let first: CampaignReport;
  const uuidOf = (contactId: string): string => rig.sim.data(CLIENT).contacts.find((c) => c.extPlatformId === contactId)!.uuid;
  const storedCalls = (number?: string) => rig.sim.data(CLIENT).calls.filter((c) => number === undefined || c.numberToCall === number);

  async function run(input: { source?: 'overdue' | 'list'; overrides?: Record<string, unknown>; dryRun?: boolean; list?: string }): Promise<CampaignReport> {
    const campaignId = newCampaignId(input.dryRun ? 'dry' : 'cmp');
    const base = { tenantId: 'acme', campaignId, requestedAt: Date.now(), overrides: input.overrides ?? {}, dryRun: input.dryRun ?? false };
    if (input.list !== undefined) {
      const parsed = parseCallList(input.list, 'csv', { tenant: 'acme', campaignId, region: 'SA' });
      expect(parsed.errors).toEqual([]);
      await enqueueCampaign(rig.app.queues.calls, calls.store, { ...base, source: { kind: 'list' } }, parsed.targets);
    } else {
      await enqueueCampaign(rig.app.queues.calls, calls.store, { ...base, source: { kind: 'overdue', criteria } });
    }
    await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
    return (await calls.store.report(campaignId))!;
  }
  const states = (r: CampaignReport) => Object.fromEntries(r.entries.map((e) => [e.number, e.state]));

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme-calls' }, extra: { calls: { defaultRegion: 'SA', requestSize: 2 } } }],
      logLevel: 'warn',
    });
    const platform = rig.memory.get('acme-calls');
    platform.upsertMany('contacts', CONTACTS);
    platform.upsertMany('invoices', INVOICES);
    expect((await rig.sync('acme')).outcome).toBe('succeeded');
    await rig.app.clientFor(rig.app.tenant('acme')!).updateContact({ uuid: uuidOf('C-06'), remindersEnabled: false });
    calls = createCallStores(rig.app.redis, rig.env.KEY_PREFIX, { cooldownMs: rig.env.CALL_COOLDOWN_HOURS * 3_600_000 });
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('a dry run previews who would be called and why others are left out, and reserves and calls nothing', async () => {
    const r = await run({ dryRun: true });
    expect(r.campaign.status).toBe('previewed');
    expect(states(r)).toEqual({ [NUMBERS.noor]: 'planned', [NUMBERS.gulf]: 'planned' });
    expect(Object.fromEntries(r.skipped.map((s) => [s.who, s.reason]))).toEqual(SKIPPED);
    expect(callRequests(rig.sim)).toBe(0);
    expect((await calls.callLedger.peek('acme', [NUMBERS.noor, NUMBERS.gulf])).size).toBe(0);
  });

  it('calls exactly the intended contacts once, with their tags and metadata', async () => {
    first = await run({});
    expect(first.campaign.status).toBe('done');
    expect(first.counts).toMatchObject({ called: 2, unknown: 0, failed: 0, cooldown: 0, skipped: 6 });
    expect(Object.fromEntries(first.skipped.map((s) => [s.who, s.reason]))).toEqual(SKIPPED);
    expect(first.campaign.plan).toEqual({ targets: 2, requests: 1, skipped: 6, invoices: 9, contacts: 8 });
    expect(rig.sim.counters().requests[BULK]).toEqual({ '201': 1 });

    const stored = storedCalls();
    expect(stored.map((c) => c.numberToCall).sort()).toEqual([NUMBERS.noor, NUMBERS.gulf].sort());
    const noor = storedCalls(NUMBERS.noor)[0]!;
    const invoiceUuid = (id: string) => rig.sim.data(CLIENT).invoices.find((i) => i.extPlatformId === id)!.uuid;
    expect(noor).toMatchObject({
      kind: 'bulk',
      firstName: 'Fahad',
      lastName: 'Al-Harbi',
      // (The service's own contactUuid is whichever stored contact it matches by number: C-07 shares it.)
      metadata: { tenant: 'acme', campaignId: first.campaign.id, contactUuid: uuidOf('C-01'), contactId: 'C-01', invoiceUuids: [invoiceUuid('101'), invoiceUuid('102')] },
    });
    expect(noor.prompt).toBe(DEFAULT_TEMPLATE.prompt.replace('{{customerName}}', 'Al Noor Trading').replace('{{amountDue}}', '12,345.50 SAR').replace('{{invoiceNumbers}}', 'INV-101, INV-102').replace('{{daysOverdue}}', '45'));
    expect(storedCalls(NUMBERS.gulf)[0]!.prompt).toContain('calling Gulf Date Farms about 500.00 USD owed on invoices INV-201, 60 days overdue');
    const callUuids = new Map(first.entries.map((e) => [e.number, e.callUuid]));
    expect(callUuids.get(NUMBERS.noor)).toBe(noor.uuid);
  });

  it('a second campaign within the cooldown calls nobody twice, and sends no request', async () => {
    const before = callRequests(rig.sim);
    const again = await run({});
    expect(again.counts).toMatchObject({ called: 0, cooldown: 2 });
    expect(again.entries.find((e) => e.number === NUMBERS.noor)?.reason).toContain(`by campaign ${first.campaign.id}`);
    expect(callRequests(rig.sim)).toBe(before);
    expect(storedCalls()).toHaveLength(2);
    // A dry run shows the same.
    expect((await run({ dryRun: true })).counts).toMatchObject({ planned: 0, cooldown: 2 });
  });

  it('a template the service rejects fails the request and frees its numbers; a good one calls them', async () => {
    const list = 'number,name,tag.amountDue\n0541000001,List One,100 SAR\n0541000002,List Two,200 SAR\n';
    const rejected = await run({ list, overrides: { aiSettingsTemplateId: randomUUID() } });
    expect(rejected.counts).toMatchObject({ failed: 2, called: 0 });
    expect(rejected.entries[0]?.reason).toContain('aiSettingsTemplateId');
    expect((await calls.callLedger.peek('acme', ['+966541000001', '+966541000002'])).size).toBe(0);

    const template = randomUUID();
    rig.sim.addTemplate({ uuid: template, prompt: 'Hello {{customerName}}, you owe {{amountDue}}.' });
    const ok = await run({ list, overrides: { aiSettingsTemplateId: template } });
    expect(ok.counts).toMatchObject({ called: 2 });
    expect(storedCalls('+966541000002').map((c) => [c.prompt, c.templateId])).toEqual([['Hello List Two, you owe 200 SAR.', template]]);
  });

  it('commit-then-drop gives unknown outcomes that are never sent again, not even when the job runs again', async () => {
    const list = 'number,name\n0542000001,Drop One\n0542000002,Drop Two\n0542000003,Drop Three\n';
    rig.sim.setFaults({ script: [{ route: BULK, fault: 'drop', count: 1 }] });
    const before = callRequests(rig.sim);
    const r = await run({ list, overrides: { requestSize: 1 } });
    expect(r.campaign.status).toBe('done');
    expect(states(r)).toEqual({ '+966542000001': 'unknown', '+966542000002': 'called', '+966542000003': 'called' });
    expect(callRequests(rig.sim) - before).toBe(3);
    expect(storedCalls('+966542000001')).toHaveLength(1); // the service did commit it, once
    expect((await calls.store.unknownOf('acme')).get(r.campaign.id)).toEqual(['+966542000001']);

    // BullMQ delivers at least once: the same campaign job again finds nothing to send.
    await calls.store.update(r.campaign.id, { status: 'running' });
    const job = await rig.app.queues.calls.add(JOBS.campaign.name, { tenantId: 'acme', campaignId: r.campaign.id, source: { kind: 'list' }, requestedAt: Date.now() }, { jobId: `calls.${r.campaign.id}.again` });
    await waitForCampaign(calls.store, r.campaign.id, { timeoutMs: 30_000, pollMs: 50 });
    expect(await job.getState()).toBe('completed');
    expect(callRequests(rig.sim) - before).toBe(3);
    expect(storedCalls('+966542000001')).toHaveLength(1);

    // Held until an operator decides: a later campaign leaves it out; after release it may be called.
    const later = await run({ list: 'number\n0542000001\n' });
    expect(later.entries[0]?.reason).toContain(`called with an unknown outcome by campaign ${r.campaign.id}`);
    await resolveUnknown(calls.store, calls.callLedger, { tenant: 'acme', campaignId: r.campaign.id, action: 'release' });
    expect(states((await calls.store.report(r.campaign.id))!)['+966542000001']).toBe('released');
    const afterRelease = await run({ list: 'number\n0542000001\n' });
    expect(afterRelease.counts.called).toBe(1);
  });

  it('a confirmed unknown call keeps its number in cooldown', async () => {
    rig.sim.setFaults({ script: [{ route: BULK, fault: 'drop', count: 1 }] });
    const r = await run({ list: 'number\n0543000001\n' });
    expect(r.counts.unknown).toBe(1);
    await resolveUnknown(calls.store, calls.callLedger, { tenant: 'acme', campaignId: r.campaign.id, action: 'confirm', number: '+966543000001' });
    expect((await calls.callLedger.peek('acme', ['+966543000001'])).get('+966543000001')?.state).toBe('called');
    const later = await run({ list: 'number\n0543000001\n' });
    expect(later.counts).toMatchObject({ cooldown: 1, called: 0 });
  });

  it('a request that certainly did not reach the service is tried again by the job; on the last attempt the rest fails and is freed', async () => {
    const add = async (list: string, attempts: number) => {
      const campaignId = newCampaignId('cmp');
      const parsed = parseCallList(list, 'csv', { tenant: 'acme', campaignId, region: 'SA' });
      const data = { tenantId: 'acme', campaignId, source: { kind: 'list' as const }, requestedAt: Date.now() };
      await calls.store.create({ id: campaignId, tenant: 'acme', source: 'list', dryRun: false, createdAt: data.requestedAt, status: 'queued' }, parsed.targets);
      await rig.app.queues.calls.add(JOBS.campaign.name, data, { jobId: `calls.${campaignId}`, attempts, backoff: { type: 'fixed', delay: 200 } });
      await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
      return (await calls.store.report(campaignId))!;
    };
    // 503s outlast the client's own retries (HTTP_RETRIES 4): the first attempt ends, the second calls.
    rig.sim.setFaults({ script: [{ route: BULK, fault: '503', count: 5 }] });
    const retried = await add('number\n0546000001\n', 2);
    expect(retried.counts).toMatchObject({ called: 1, failed: 0, unknown: 0 });
    expect(storedCalls('+966546000001')).toHaveLength(1);

    rig.sim.setFaults({ script: [{ route: BULK, fault: '503', count: 5 }] });
    const gaveUp = await add('number\n0546000002\n', 1);
    expect(gaveUp.campaign).toMatchObject({ status: 'failed', error: expect.stringContaining('gave up after 1 attempt(s)') as unknown });
    expect(gaveUp.counts).toMatchObject({ failed: 1, called: 0 });
    expect(storedCalls('+966546000002')).toHaveLength(0);
    expect((await calls.callLedger.peek('acme', ['+966546000002'])).size).toBe(0);
  });

  it('a cancelled campaign stops before its next request and frees the numbers it did not call', async () => {
    const list = `number\n${['01', '02', '03', '04'].map((n) => `05440000${n}`).join('\n')}\n`;
    const campaignId = newCampaignId('cmp');
    const parsed = parseCallList(list, 'csv', { tenant: 'acme', campaignId, region: 'SA' });
    rig.sim.setFaults({ latencyMs: 600 });
    try {
      await enqueueCampaign(rig.app.queues.calls, calls.store, { tenantId: 'acme', campaignId, source: { kind: 'list' }, overrides: { requestSize: 1 }, requestedAt: Date.now() }, parsed.targets);
      for (;;) {
        const reqs = await calls.store.requests(campaignId);
        if (reqs[0]?.state === 'sending') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await calls.store.cancel(campaignId)).toBe(true);
      await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
    } finally {
      rig.sim.setFaults({ latencyMs: 0 });
    }
    const r = (await calls.store.report(campaignId))!;
    expect(r.campaign.status).toBe('cancelled');
    expect(r.counts).toMatchObject({ called: 1, cancelled: 3 });
    expect((await calls.callLedger.peek('acme', ['+966544000002', '+966544000003', '+966544000004'])).size).toBe(0);
  });

  it('calls one stored contact, once within the cooldown', async () => {
    const one = async () => {
      const campaignId = newCampaignId('one');
      await enqueueSingleCall(rig.app.queues.calls, calls.store, { tenantId: 'acme', campaignId, contactUuid: uuidOf('C-12'), requestedAt: Date.now() });
      await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
      return (await calls.store.report(campaignId))!;
    };
    const r = await one();
    expect(states(r)).toEqual({ [NUMBERS.single]: 'called' });
    expect(storedCalls().filter((c) => c.kind === 'single' && c.contactUuid === uuidOf('C-12'))).toHaveLength(1);
    const before = callRequests(rig.sim);
    expect(states(await one())).toEqual({ [NUMBERS.single]: 'cooldown' });
    expect(callRequests(rig.sim)).toBe(before);
    // A contact with reminders disabled in the service is refused as a whole.
    const campaignId = newCampaignId('one');
    await enqueueSingleCall(rig.app.queues.calls, calls.store, { tenantId: 'acme', campaignId, contactUuid: uuidOf('C-06'), requestedAt: Date.now() });
    const refused = await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
    expect(refused).toMatchObject({ status: 'failed', error: expect.stringContaining('reminders disabled') as unknown });
    expect(callRequests(rig.sim)).toBe(before);
  });
});
