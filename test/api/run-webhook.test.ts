/**
 * The company's app end to end: a run requested over the control API lands its records, its `run.finished` reaches the
 * app's receiver signed per Standard Webhooks (verified with the `standardwebhooks` package), and after the receiver
 * failed once the same event comes again with the same webhook-id; `GET /v1/tenants` then shows the delivery. Every
 * answer of the API is checked against the generated OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/index.js';
import { ApiClient } from '../helpers/openapi.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { newSecret, startReceiver, until, type Receiver } from '../notify/receiver.js';

const KEY = 'app-key-Xq4Rn8WzT2bLk6VsMd9JhC3Fp7Ge5Ay';
const PLATFORM = `api-webhook-${process.pid}-${Date.now()}`;
const T = '2026-11-02T08:15:00.000Z';

type Requested = { runId: string; tenantId: string; links: { run: string } };
type Run = { runId: string; state: string; outcome: string | null; counts: { total: Record<string, number>; byEntity: Record<string, Record<string, number>> } };
type Tenants = { items: { id: string; lastRun: { runId: string } | null; lastWebhook: { eventId: string; state: string; attempts: number; statusCode?: number } | null }[] };
type RunFinished = { type: string; data: { tenantId: string; runId: string; mode: string; trigger: string; outcome: string; counts: { total: Record<string, number>; byEntity: Record<string, Record<string, number>> } } };

describe('a run requested over HTTP, and its signed run webhook', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let receiver: Receiver;
  let api: ApiClient;

  beforeAll(async () => {
    const secret = newSecret();
    // The receiver fails its first request: the event must come again, the same.
    receiver = await startReceiver(secret, (n) => (n === 1 ? 500 : 'ok'));
    const port = await freePort();
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: PLATFORM }, extra: { notify: { url: receiver.url, secret } } }],
      env: { WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', API_KEYS: `app:${KEY}`, NOTIFY_BACKOFF_MS: '30', NOTIFY_BACKOFF_MAX_MS: '120', OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' },
    });
    const platform = rig.memory.get(PLATFORM);
    for (const c of ['C1', 'C2', 'C3']) {
      platform.upsert('contacts', { id: c, updatedAt: T, name: `Company ${c}` });
      for (const n of [1, 2]) platform.upsert('invoices', { id: `${c}-I${n}`, contactId: c, updatedAt: T, status: 'AUTHORISED', number: `N-${c}-${n}`, date: '2026-10-01', dueDate: '2026-10-31', total: 100 });
    }
    api = new ApiClient(openApiDocument(), `http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await receiver?.close();
    await rig?.close();
  });

  it('lands the records, tells the receiver once it is done (again, the same, after a failure) and shows the delivery', async () => {
    const asked = await api.call<Requested>('POST', '/v1/tenants/acme/runs', { key: KEY, body: { mode: 'full' }, headers: { 'idempotency-key': 'first-sync-acme' } });
    expect(asked.status).toBe(202);
    const run = await until(async () => (await api.call<Run>('GET', asked.body.links.run, { key: KEY })).body, (r) => r.state === 'finished', 60_000);
    expect(run).toMatchObject({ runId: asked.body.runId, outcome: 'succeeded' });
    const landed = rig.sim.data('client-acme');
    expect(landed.contacts).toHaveLength(3);
    expect(landed.invoices).toHaveLength(6);
    expect(run.counts.total['created']).toBe(9);

    const [first, second] = await receiver.waitFor(2, 30_000);
    expect(first!.valid && second!.valid).toBe(true);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    const event = second!.verified as RunFinished;
    expect(event).toMatchObject({ type: 'run.finished', data: { tenantId: 'acme', runId: asked.body.runId, mode: 'full', trigger: 'api', outcome: 'succeeded' } });
    // the counts nested as the run's view has them (one shape for both)
    expect(event.data.counts).toEqual(run.counts);
    expect(event.data.counts.total['created']).toBe(9);

    const tenants = await until(async () => (await api.call<Tenants>('GET', '/v1/tenants', { key: KEY })).body, (t) => t.items[0]?.lastWebhook?.state === 'delivered');
    expect(tenants.items[0]).toMatchObject({ id: 'acme', lastRun: { runId: asked.body.runId }, lastWebhook: { eventId: first!.headers['webhook-id'], state: 'delivered', attempts: 2, statusCode: 204 } });
    // Delivered: nothing more comes for this run.
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(2);
  });
});
