/**
 * At-least-once delivery: the real worker (a child process) is killed with SIGKILL while a bulk-call request
 * is in flight. BullMQ runs the campaign job again in a new worker; the request it finds in `sending` becomes
 * `unknown` and is never sent again; the rest of the campaign goes on.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallStores, newCampaignId, waitForCampaign } from '../../src/calls/index.js';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { enqueueCampaign, QUEUES, requestSync } from '../../src/queues/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { createStateStores, waitForRun } from '../../src/state/index.js';
import { spawnWorker, type ChildWorker } from '../helpers/child-worker.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';
import { tenantsJson } from '../helpers/rig.js';
import { AS_OF, CONTACTS, INVOICES, NUMBERS } from './fixtures.js';
import { queuePrefix } from '../../src/redis/keys.js';

const BULK = 'POST /ai/phone-calls/action/call-bulk';

describe('a campaign whose worker is killed mid-request', () => {
  const redis = useTestRedis();
  let sim: Simulator;
  let folder: string;
  let conn: Redis;
  let syncQueue: Queue;
  let callsQueue: Queue;
  const prefix = testPrefix('callcrash');
  const workers: ChildWorker[] = [];

  const start = (): ChildWorker => {
    const w = spawnWorker({
      REDIS_URL: redis.url,
      KEY_PREFIX: prefix,
      COLLECTIONS_BASE_URL: sim.baseUrl,
      COLLECTIONS_AUTH_URL: sim.authUrl,
      TENANTS_FILE: join(folder, 'tenants.json'),
      JOB_LOCK_MS: '2000',
      HTTP_REQUEST_TIMEOUT_MS: '15000',
      HTTP_HEADERS_TIMEOUT_MS: '10000',
    });
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-callcrash-'));
    await writeNdjson(join(folder, 'contacts.ndjson'), CONTACTS);
    await writeNdjson(join(folder, 'invoices.ndjson'), INVOICES);
    sim = await startSimulator({ clients: [{ clientId: 'client-acme', clientSecret: 'secret-acme-x9' }] });
    await writeFile(join(folder, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'file', path: folder }, extra: { calls: { defaultRegion: 'SA', requestSize: 1 } } }]));
    conn = new Redis(redis.url, { maxRetriesPerRequest: null });
    syncQueue = new Queue(QUEUES.sync, { connection: conn, prefix: queuePrefix(prefix, QUEUES.sync) });
    callsQueue = new Queue(QUEUES.calls, { connection: conn, prefix: queuePrefix(prefix, QUEUES.calls) });
  });
  afterAll(async () => {
    for (const w of workers) await w.kill9();
    await syncQueue?.close();
    await callsQueue?.close();
    conn?.disconnect();
    await sim?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('marks the request that was in flight unknown, never sends it again, and calls the rest', async () => {
    let worker = start();
    const { requestedAt } = await requestSync(syncQueue, 'acme', 'full', { trigger: 'test' });
    expect((await waitForRun(createStateStores(conn, prefix).runs, 'acme', { mode: 'full', requestedAt, timeoutMs: 60_000 })).outcome).toBe('succeeded');

    const { store } = createCallStores(conn, prefix, { cooldownMs: 24 * 3_600_000 });
    const campaignId = newCampaignId('cmp');
    sim.setFaults({ latencyMs: 4_000 });
    await enqueueCampaign(callsQueue, store, { tenantId: 'acme', campaignId, source: { kind: 'overdue', criteria: { overdueDays: 30, minAmount: 100, asOf: AS_OF } }, requestedAt: Date.now() });
    const deadline = Date.now() + 40_000;
    for (;;) {
      const reqs = await store.requests(campaignId);
      if (reqs[0]?.state === 'sending') break;
      if (Date.now() > deadline) throw new Error(`request 0 never went out: ${JSON.stringify(reqs)}\n${worker.output()}`);
      await new Promise((r) => setTimeout(r, 25));
    }
    // Kill the worker once the request is at the service (held there by the latency): it was sent, its answer is lost.
    while ((sim.inFlight()[BULK] ?? 0) === 0) {
      if (Date.now() > deadline) throw new Error(`the bulk request never reached the service\n${worker.output()}`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await worker.kill9();
    sim.setFaults({ latencyMs: 0 });
    worker = start();

    const meta = await waitForCampaign(store, campaignId, { timeoutMs: 45_000, pollMs: 100 }).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${worker.output()}`);
    });
    expect(meta.status).toBe('done');
    const report = (await store.report(campaignId))!;
    const byRequest = new Map(report.entries.map((e) => [e.request, e]));
    expect(byRequest.get(0)).toMatchObject({ state: 'unknown', reason: expect.stringContaining('may have gone out') as unknown });
    // (C-06's reminders are on in this service: three numbers, one per request.)
    expect(report.entries).toHaveLength(3);
    expect(report.entries.filter((e) => e.request > 0).map((e) => e.state)).toEqual(['called', 'called']);
    expect(report.entries.map((e) => e.number)).toEqual(expect.arrayContaining([NUMBERS.noor, NUMBERS.gulf]));

    // The one in flight at the kill (the service finishes it though its caller is gone) and the two after. None twice.
    for (const end = Date.now() + 20_000; (sim.inFlight()[BULK] ?? 0) > 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 25));
    const sent = sim.counters().requests[BULK] ?? {};
    expect(sent['201']).toBe(3);
    expect(Object.keys(sent)).toEqual(['201']);
    const calls = sim.data('client-acme').calls;
    expect(calls.filter((c) => c.numberToCall === byRequest.get(0)?.number).length).toBeLessThanOrEqual(1);
    for (const e of report.entries.filter((x) => x.request > 0)) expect(calls.filter((c) => c.numberToCall === e.number)).toHaveLength(1);
    expect((await store.unknownOf('acme')).get(campaignId)).toEqual([byRequest.get(0)?.number]);
  });
});
