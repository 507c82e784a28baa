/**
 * The call webhook receiver end to end (issue 19): campaigns whose bulk requests are committed by the simulator
 * and their answers dropped leave calls `unknown`; webhook posts carrying the metadata the service stored with
 * those calls settle exactly them (confirmed, numbers kept in cooldown, the campaign's report and exit status
 * follow); a replayed event changes nothing; bad secrets, oversized, non-JSON bodies and unknown tenants are
 * refused and record nothing; a flood is rate-limited; the receiver is off by default.
 */
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallStores, exitCodeOfReport, newCampaignId, parseCallList, plannedRecords, resolveSettings, waitForCampaign, type CallStores, type CampaignReport } from '../../src/calls/index.js';
import { loadEnv } from '../../src/config/env.js';
import { enqueueCampaign, JOBS } from '../../src/queues/index.js';
import type { StoredEvent } from '../../src/webhooks/index.js';
import { startWorker } from '../../src/worker.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig, type TenantSpec } from '../helpers/rig.js';
import { AS_OF, CONTACTS, INVOICES, NUMBERS } from './../calls/fixtures.js';

const CLIENT = 'client-acme';
const BULK = 'POST /ai/phone-calls/action/call-bulk';
const SECRET = 'whsec-acme-0123456789abcdef';
const BETA_SECRET = 'whsec-beta-0123456789abcdef';
const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const TENANTS: TenantSpec[] = [
  { id: 'acme', platform: { kind: 'memory', name: 'acme-hooks' }, extra: { calls: { defaultRegion: 'SA', requestSize: 2, webhookSecret: SECRET } } },
  { id: 'beta', platform: { kind: 'memory', name: 'beta-hooks' }, extra: { calls: { webhookSecret: BETA_SECRET } } },
  { id: 'gamma', platform: { kind: 'memory', name: 'gamma-hooks' } },
];

describe('call webhooks settle unknown outcomes', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let calls: CallStores;
  let base: string;
  let dir: string;
  const cli = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve) => {
      const env = { ...process.env, LOG_LEVEL: 'warn', ...rig.cliEnv(join(dir, 'tenants.json')) };
      const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'calls', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });

  const post = (path: string, body: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${base}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  const bearer = (secret = SECRET) => ({ authorization: `Bearer ${secret}` });
  const signed = (body: string, secret = SECRET) => ({ 'x-webhook-signature': createHmac('sha256', secret).update(body).digest('hex') });
  const kept = () => rig.app.webhookEvents.list('acme', 10_000);
  const metric = async (outcome: string, tenant = 'acme'): Promise<number> => {
    const text = await rig.metrics.registry.metrics();
    const m = new RegExp(`^collections_sync_webhook_events_total\\{tenant="${tenant.replace(/[()]/g, '\\$&')}",outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
  async function handled(id: string): Promise<StoredEvent> {
    for (const end = Date.now() + 30_000; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) {
      const e = await rig.app.webhookEvents.get('acme', id);
      if (e?.outcome !== undefined) return e;
    }
    throw new Error(`webhook event ${id} was never worked`);
  }
  async function campaign(input: { list?: string; requestSize: number }): Promise<CampaignReport> {
    const campaignId = newCampaignId('cmp');
    const data = { tenantId: 'acme', campaignId, requestedAt: Date.now(), overrides: { requestSize: input.requestSize } };
    if (input.list !== undefined) {
      const parsed = parseCallList(input.list, 'csv', { tenant: 'acme', campaignId, region: 'SA' });
      await enqueueCampaign(rig.app.queues.calls, calls.store, { ...data, source: { kind: 'list' } }, parsed.targets);
    } else {
      await enqueueCampaign(rig.app.queues.calls, calls.store, { ...data, source: { kind: 'overdue', criteria: { overdueDays: 30, minAmount: 100, asOf: AS_OF } } });
    }
    await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
    return (await calls.store.report(campaignId))!;
  }
  const states = (r: CampaignReport) => Object.fromEntries(r.entries.map((e) => [e.number, e.state]));
  /** What the service stored with the call to `number` (and echoes as requestMetadata). */
  const storedMetadata = (number: string) => rig.sim.data(CLIENT).calls.find((c) => c.numberToCall === number)!.metadata!;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-webhooks-'));
    await writeFile(join(dir, 'tenants.json'), tenantsJson(TENANTS));
    rig = await startRig({
      redisUrl: redis.url,
      tenants: TENANTS,
      env: { WEBHOOK_RATE_PER_MIN: '20' },
      worker: { webhookPort: 'random', webhookHost: '127.0.0.1' },
      logLevel: 'info',
    });
    base = `http://127.0.0.1:${rig.worker!.webhooks!.port}`;
    const platform = rig.memory.get('acme-hooks');
    platform.upsertMany('contacts', CONTACTS);
    platform.upsertMany('invoices', INVOICES);
    expect((await rig.sync('acme')).outcome).toBe('succeeded');
    const disputed = rig.sim.data(CLIENT).contacts.find((c) => c.extPlatformId === 'C-06')!.uuid;
    await rig.app.clientFor(rig.app.tenant('acme')!).updateContact({ uuid: disputed, remindersEnabled: false });
    calls = createCallStores(rig.app.redis, rig.env.KEY_PREFIX, { cooldownMs: rig.env.CALL_COOLDOWN_HOURS * 3_600_000 });
  });
  afterAll(async () => {
    await rig?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is off by default: no WEBHOOK_PORT, no receiver', async () => {
    expect(loadEnv({}).WEBHOOK_PORT).toBeUndefined();
    const worker = await startWorker(rig.app, { opsPort: 0, schedules: false, queues: [] });
    try {
      expect(worker.webhooks).toBeUndefined();
    } finally {
      await worker.close(5_000);
    }
  });

  it('refuses a bad secret, an unknown tenant, a tenant without a secret, an oversized or non-JSON body, and records nothing', async () => {
    const body = JSON.stringify({ id: 'evt-refused', requestMetadata: { tenant: 'acme', campaignId: 'cmp-x' } });
    const answers = [
      await post('/webhooks/calls/acme', body, bearer('wrong-secret-0123456789')),
      await post('/webhooks/calls/acme', body, signed(body, 'wrong-secret-0123456789')),
      await post('/webhooks/calls/acme', body),
      await post('/webhooks/calls/nobody', body, bearer()),
      await post('/webhooks/calls/gamma', body, bearer()),
      await post('/webhooks/calls/acme', JSON.stringify({ pad: 'x'.repeat(70 * 1024) }), bearer()),
      await post('/webhooks/calls/acme', 'id=evt-form', { ...bearer(), 'content-type': 'application/x-www-form-urlencoded' }),
      await post('/webhooks/calls/acme', '{"id": "evt-broken"', bearer()),
    ];
    expect(answers.map((a) => a.status)).toEqual([401, 401, 401, 401, 401, 413, 415, 400]);
    expect(await kept()).toEqual([]);
    expect(await rig.app.queues.calls.getJobCounts('waiting', 'delayed', 'active', 'completed')).toEqual({ waiting: 0, delayed: 0, active: 0, completed: 0 });
    expect(await metric('refused')).toBe(6);
    expect(await metric('refused', '(unknown)')).toBe(2);
    // Nothing else is served, and an unknown path says no more than a refused request (decision 0115).
    expect((await post('/webhooks/other', body, bearer())).status).toBe(401);
  });

  it('settles exactly the calls whose answers were lost; a replayed event changes nothing', async () => {
    // The one bulk request (both numbers) is committed by the service and its answer dropped: both unknown.
    rig.sim.setFaults({ script: [{ route: BULK, fault: 'drop', count: 1 }] });
    const overdue = await campaign({ requestSize: 2 });
    expect(states(overdue)).toEqual({ [NUMBERS.noor]: 'unknown', [NUMBERS.gulf]: 'unknown' });
    expect(exitCodeOfReport(overdue)).toBe(3);
    // A list: only the first of three requests loses its answer.
    rig.sim.setFaults({ script: [{ route: BULK, fault: 'drop', count: 1 }] });
    const list = await campaign({ list: 'number,name\n0542000001,Drop One\n0542000002,Drop Two\n0542000003,Drop Three\n', requestSize: 1 });
    expect(states(list)).toEqual({ '+966542000001': 'unknown', '+966542000002': 'called', '+966542000003': 'called' });
    const calledAt = list.entries.find((e) => e.number === '+966542000002')!.at;

    // The payload's shape is not shown: requestMetadata nested in one object, or at the top level; Bearer or HMAC.
    const events = [
      { id: 'evt-noor', type: 'call.ended', data: { status: 'completed', requestMetadata: storedMetadata(NUMBERS.noor) } },
      { eventId: 'evt-gulf', requestMetadata: storedMetadata(NUMBERS.gulf) },
      { id: 'evt-drop-1', call: { requestMetadata: storedMetadata('+966542000001') } },
      { id: 'evt-drop-2', call: { requestMetadata: storedMetadata('+966542000002') } },
    ];
    for (const [i, e] of events.entries()) {
      const body = JSON.stringify(e);
      const res = await post('/webhooks/calls/acme', body, i % 2 === 0 ? bearer() : signed(body));
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ ok: true, duplicate: false });
    }
    const outcomes = await Promise.all(['evt-noor', 'evt-gulf', 'evt-drop-1', 'evt-drop-2'].map(async (id) => (await handled(id)).outcome));
    expect(outcomes).toEqual(['settled', 'settled', 'settled', 'unchanged']);

    const after = (await calls.store.report(overdue.campaign.id))!;
    expect(states(after)).toEqual({ [NUMBERS.noor]: 'confirmed', [NUMBERS.gulf]: 'confirmed' });
    expect(after.entries[0]?.reason).toContain('webhook event evt-');
    expect(exitCodeOfReport(after)).toBe(0);
    const listAfter = (await calls.store.report(list.campaign.id))!;
    expect(states(listAfter)).toEqual({ '+966542000001': 'confirmed', '+966542000002': 'called', '+966542000003': 'called' });
    expect(listAfter.entries.find((e) => e.number === '+966542000002')!.at).toBe(calledAt);
    expect(exitCodeOfReport(listAfter)).toBe(0);
    expect(await calls.store.unknownOf('acme')).toEqual(new Map());
    // Kept in cooldown, never sent again: a later campaign leaves them out.
    const ledger = await calls.callLedger.peek('acme', [NUMBERS.noor, NUMBERS.gulf, '+966542000001']);
    expect([...ledger.values()].map((h) => h.state)).toEqual(['called', 'called', 'called']);
    const requestsBefore = rig.sim.counters().requests[BULK];
    const later = await campaign({ list: 'number\n0542000001\n', requestSize: 1 });
    expect(later.counts).toMatchObject({ cooldown: 1, called: 0 });
    expect(rig.sim.counters().requests[BULK]).toEqual(requestsBefore);
    expect(await metric('settled')).toBe(3);

    // The same event again: accepted as a duplicate, nothing recorded or changed.
    const keptBefore = await kept();
    const replay = await post('/webhooks/calls/acme', JSON.stringify(events[0]), bearer());
    expect(await replay.json()).toMatchObject({ ok: true, eventId: 'evt-noor', duplicate: true });
    const again = (await calls.store.report(overdue.campaign.id))!;
    expect(again.entries).toEqual(after.entries);
    expect(await kept()).toEqual(keptBefore);
    expect(await metric('duplicate')).toBe(1);
    expect(await metric('settled')).toBe(3);
  });

  it('settles a call whose request a stopped campaign left `sending`, and the campaign re-run keeps it called without sending', async () => {
    const campaignId = newCampaignId('cmp');
    const number = '+966547000001';
    const { targets } = parseCallList('number\n0547000001\n', 'csv', { tenant: 'acme', campaignId, region: 'SA' });
    const settings = resolveSettings(rig.app.tenant('acme')!.calls);
    if (!settings.ok) throw new Error('settings');
    const now = Date.now();
    const plan = plannedRecords(targets, settings.settings, now);
    const meta = { id: campaignId, tenant: 'acme', source: 'list' as const, dryRun: false, createdAt: now, status: 'running' as const };
    await calls.store.create(meta, targets);
    await calls.store.storePlan({ ...meta, settings: settings.settings, plan: { targets: 1, requests: 1, skipped: 0 }, startedAt: now }, { ...plan, skipped: [] });
    await calls.callLedger.reserve('acme', campaignId, 0, [number]);
    expect(await calls.store.transition(campaignId, 'planned', { ...plan.requests[0]!, state: 'sending', sent: [number], updatedAt: now })).toBe(true);

    const res = await post('/webhooks/calls/acme', JSON.stringify({ id: 'evt-sending', data: { requestMetadata: targets[0]!.contact.metadata } }), bearer());
    expect(res.status).toBe(200);
    expect(await handled('evt-sending')).toMatchObject({ outcome: 'settled', detail: 'was sending', settled: [{ campaignId, number }] });
    expect((await calls.store.entries(campaignId))[0]).toMatchObject({ state: 'called' });
    expect((await calls.callLedger.peek('acme', [number])).get(number)?.state).toBe('called');

    const bulkBefore = rig.sim.counters().requests[BULK];
    await rig.app.queues.calls.add(JOBS.campaign.name, { tenantId: 'acme', campaignId, source: { kind: 'list' }, requestedAt: Date.now() }, { jobId: `calls.${campaignId}` });
    await waitForCampaign(calls.store, campaignId, { timeoutMs: 30_000, pollMs: 50 });
    const r = (await calls.store.report(campaignId))!;
    expect(r.campaign.status).toBe('done');
    expect(states(r)).toEqual({ [number]: 'called' });
    expect((await calls.store.request(campaignId, 0))?.state).toBe('sent');
    expect(rig.sim.counters().requests[BULK]).toEqual(bulkBefore);
    expect(exitCodeOfReport(r)).toBe(0);
  });

  it('keeps an event that names nothing of ours, logs it once, and lists every event with `calls events`', async () => {
    const body = JSON.stringify({ id: 'evt-stranger', data: { requestMetadata: { tenant: 'acme', campaignId: 'cmp-not-ours-1', number: '+966500000000' } } });
    expect((await post('/webhooks/calls/acme', body, bearer())).status).toBe(200);
    expect((await post('/webhooks/calls/acme', body, bearer())).status).toBe(200);
    const e = await handled('evt-stranger');
    expect(e).toMatchObject({ outcome: 'unmatched', detail: 'no campaign cmp-not-ours-1 of tenant acme' });
    expect(rig.logs.filter((l) => l.includes('evt-stranger') && l.includes('names no call of ours'))).toHaveLength(1);
    const ids = (await kept()).map((k) => k.id);
    expect(ids[0]).toBe('evt-stranger');
    expect(ids).toEqual(expect.arrayContaining(['evt-noor', 'evt-gulf', 'evt-drop-1', 'evt-drop-2']));

    const json = await cli(['events', '--tenant', 'acme', '--json']);
    expect(json.code, json.stderr).toBe(0);
    const listed = JSON.parse(json.stdout) as { tenant: string; events: StoredEvent[] };
    expect(listed.events.map((x) => [x.id, x.outcome])).toEqual((await kept()).map((x) => [x.id, x.outcome]));
    const text = await cli(['events', '--tenant', 'acme']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('evt-stranger  unmatched (no campaign cmp-not-ours-1 of tenant acme)  campaignId=cmp-not-ours-1 number=+966500000000');
    expect(text.stdout).toMatch(/evt-noor {2}settled \(was unknown\) {2}campaignId=cmp-/);
  });

  it('rate-limits each tenant on its own (429 with Retry-After)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 21; i += 1) statuses.push((await post('/webhooks/calls/beta', JSON.stringify({ id: `evt-flood-${i}` }), bearer(BETA_SECRET))).status);
    expect(statuses.slice(0, 20).every((s) => s === 200)).toBe(true);
    const limited = await post('/webhooks/calls/beta', JSON.stringify({ id: 'evt-flood-x' }), bearer(BETA_SECRET));
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await rig.app.webhookEvents.list('beta', 100)).map((e) => e.id)).not.toContain('evt-flood-x');
  });
});
