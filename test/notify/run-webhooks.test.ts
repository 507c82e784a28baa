/**
 * Run webhooks end to end (docs/run-webhooks.md): a sync run's `run.finished` reaches a receiver that verifies it
 * with the `standardwebhooks` package; a receiver that failed once gets the same webhook-id again, validly signed;
 * attempts are bounded (then `failed`, logged and counted); a receiver that never answers holds only a notify slot,
 * never a sync's; job data and logs hold neither the secret nor the address.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseTenants } from '../../src/config/tenants.js';
import { runFinishedEvent } from '../../src/notify/index.js';
import { JOBS } from '../../src/queues/index.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';
import { newSecret, startReceiver, until, type Answer, type Receiver } from './receiver.js';

/** Short back-off so retries come in milliseconds, not minutes. */
const FAST = { NOTIFY_BACKOFF_MS: '30', NOTIFY_BACKOFF_MAX_MS: '120' };
/** The receivers here listen on this machine, which a tenant's own URL reaches only when allowed. */
const LOCAL = { OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8' };

describe('run webhooks', () => {
  const redis = useTestRedis();
  let rig: Rig | undefined;
  let receiver: Receiver | undefined;

  afterEach(async () => {
    // The receiver first: a held request then ends (reset), so the worker's close does not wait on it.
    await receiver?.close();
    await rig?.close();
    rig = undefined;
    receiver = undefined;
  });

  async function start(answer: (n: number) => Answer, o: { env?: Record<string, string>; concurrency?: number; query?: string; logLevel?: string } = {}): Promise<{ rig: Rig; receiver: Receiver; secret: string }> {
    const secret = newSecret();
    receiver = await startReceiver(secret, answer);
    const url = `${receiver.url}${o.query ?? ''}`;
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: `notify-${Math.random()}` }, extra: { notify: { url, secret } } }],
      env: { ...FAST, ...LOCAL, ...o.env },
      ...(o.concurrency ? { worker: { concurrency: o.concurrency } } : {}),
      ...(o.logLevel ? { logLevel: o.logLevel } : {}),
    });
    return { rig, receiver, secret };
  }

  it("delivers a run's run.finished once, with a valid Standard Webhooks signature and the run's data", async () => {
    const { rig, receiver } = await start(() => 'ok');
    const run = await rig.sync('acme', 'full');
    expect(run.outcome).toBe('succeeded');
    await receiver.waitFor(1);
    const last = await until(() => rig.app.stores.deliveries.last('acme'), (d) => d?.state === 'delivered');
    // Nothing more comes: the event was delivered once.
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(1);
    const got = receiver.received[0]!;
    expect(got.valid).toBe(true);
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers['user-agent']).toMatch(/^collections-sync\/\d/);
    expect(got.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(got.headers['webhook-signature']).toMatch(/^v1,/);
    expect(got.verified).toMatchObject({
      type: 'run.finished',
      data: { tenantId: 'acme', runId: run.runId, mode: 'full', trigger: 'test', outcome: 'succeeded', deadLettered: 0, errors: [], startedAt: new Date(run.startedAt).toISOString(), finishedAt: new Date(run.finishedAt!).toISOString() },
    });
    expect(last).toMatchObject({ eventId: got.headers['webhook-id'], type: 'run.finished', state: 'delivered', attempts: 1, statusCode: 204 });
    expect(await rig.metrics.registry.getSingleMetricAsString('collections_sync_notify_deliveries_total')).toContain(
      'collections_sync_notify_deliveries_total{tenant="acme",type="run.finished",outcome="delivered"} 1',
    );
    // A second run is a second event (another id).
    await rig.sync('acme', 'incremental');
    await receiver.waitFor(2);
    expect(receiver.received[1]!.headers['webhook-id']).not.toBe(got.headers['webhook-id']);
  });

  it('after a receiver failed once, delivers again with the same webhook-id and a valid signature; the state ends delivered after 2 attempts', async () => {
    const { rig, receiver } = await start((n) => (n === 1 ? 500 : 'ok'));
    await rig.sync('acme', 'full');
    await receiver.waitFor(2);
    const last = await until(() => rig.app.stores.deliveries.last('acme'), (d) => d?.state === 'delivered');
    const [first, second] = receiver.received;
    expect(first!.valid && second!.valid).toBe(true);
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.body).toBe(first!.body);
    expect(last).toMatchObject({ state: 'delivered', attempts: 2, statusCode: 204 });
    const metric = () => rig.metrics.registry.getSingleMetricAsString('collections_sync_notify_deliveries_total');
    await expect.poll(metric).toContain('{tenant="acme",type="run.finished",outcome="delivered"} 1');
    expect(await metric()).toContain('{tenant="acme",type="run.finished",outcome="retried"} 1');
  });

  it('gives up after NOTIFY_ATTEMPTS: the state says failed, a warning says so (without the address) and the metric counts it', async () => {
    const { rig, receiver } = await start(() => 503, { env: { NOTIFY_ATTEMPTS: '3' }, query: '?token=query-part-of-the-url' });
    await rig.sync('acme', 'full');
    const last = await until(() => rig.app.stores.deliveries.last('acme'), (d) => d?.state === 'failed');
    expect(last).toMatchObject({ state: 'failed', attempts: 3, statusCode: 503, error: 'http 503' });
    expect(receiver.received).toHaveLength(3);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    // The delivery's state is written before its outcome is counted: the count follows within moments.
    const metric = () => rig.metrics.registry.getSingleMetricAsString('collections_sync_notify_deliveries_total');
    await expect.poll(metric).toContain('{tenant="acme",type="run.finished",outcome="failed"} 1');
    expect(await metric()).toContain('{tenant="acme",type="run.finished",outcome="retried"} 2');
    const warned = rig.logs.find((l) => l.includes('run webhook not delivered'));
    expect(warned).toBeDefined();
    expect(warned).toContain('"tenant":"acme"');
    expect(warned).toContain(`"eventId":"${String(receiver.received[0]!.headers['webhook-id'])}"`);
    expect(rig.logs.join('\n')).not.toContain('query-part-of-the-url');
    // The job failed for good after its attempts (no further one planned).
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(3);
  });

  it('a receiver that never answers does not slow the sync: runs finish while it still holds the first request', async () => {
    // One sync slot and one notify slot: a held delivery could only slow a run by taking a sync slot.
    const { rig, receiver } = await start(() => 'hang', { env: { NOTIFY_TIMEOUT_MS: '60000', NOTIFY_CONCURRENCY: '1' }, concurrency: 1 });
    const first = await rig.sync('acme', 'full');
    expect(first.outcome).toBe('succeeded');
    await receiver.waitFor(1);
    expect(receiver.held()).toBe(1);
    const second = await rig.sync('acme', 'incremental');
    expect(second.outcome).toBe('succeeded');
    // The first delivery is still held (no attempt has ended), and the run after it has ended all the same.
    expect(receiver.held()).toBe(1);
    expect(receiver.received).toHaveLength(1);
    expect(await rig.app.stores.deliveries.last('acme')).toBeUndefined();
    expect(await rig.app.queues.notify.getJobCounts('active', 'waiting')).toEqual({ active: 1, waiting: 1 });
  });

  it("one tenant's receiver that never answers holds one notify slot: another tenant's events are delivered meanwhile", async () => {
    const secret = newSecret();
    receiver = await startReceiver(secret, () => 'hang');
    const fine = await startReceiver(secret);
    try {
      rig = await startRig({
        redisUrl: redis.url,
        tenants: [
          { id: 'stuck', platform: { kind: 'memory', name: `stuck-${Math.random()}` }, extra: { notify: { url: receiver.url, secret } } },
          { id: 'fine', platform: { kind: 'memory', name: `fine-${Math.random()}` }, extra: { notify: { url: fine.url, secret } } },
        ],
        // Two notify slots: without the per-tenant lock, the stuck tenant's two events would take both.
        env: { ...FAST, ...LOCAL, NOTIFY_TIMEOUT_MS: '60000', NOTIFY_CONCURRENCY: '2' },
      });
      await rig.sync('stuck', 'full');
      await rig.sync('stuck', 'incremental');
      await receiver.waitFor(1);
      await rig.sync('fine', 'full');
      const [got] = await fine.waitFor(1, 10_000);
      expect(got!.valid).toBe(true);
      // The stuck tenant's second event waits its turn (delayed, no attempt used); its first is still held.
      expect(receiver.held()).toBe(1);
      expect(receiver.received).toHaveLength(1);
      const waiting = (await rig.app.queues.notify.getJobs(['delayed', 'waiting'])).filter((j) => (j.data as { data: { tenantId: string } }).data.tenantId === 'stuck');
      expect(waiting).toHaveLength(1);
      expect(waiting[0]!.attemptsMade).toBe(0);
    } finally {
      await fine.close();
    }
  });

  it('keeps the secret and the address out of job data and logs', async () => {
    const { rig, receiver, secret } = await start((n) => (n === 1 ? 500 : 'ok'), { query: '?key=address-secret-part', logLevel: 'debug' });
    await rig.sync('acme', 'full');
    await until(() => rig.app.stores.deliveries.last('acme'), (d) => d?.state === 'delivered');
    const jobs = await rig.app.queues.notify.getJobs(['completed', 'failed', 'delayed', 'waiting', 'active']);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.name).toBe(JOBS.notify.name);
    expect(jobs[0]!.id).toBe(receiver.received[0]!.headers['webhook-id']);
    const stored = JSON.stringify(jobs.map((j): unknown[] => [j.data as unknown, j.opts, j.returnvalue as unknown, j.failedReason, j.stacktrace]));
    const logs = rig.logs.join('\n');
    const state = JSON.stringify(await rig.app.stores.deliveries.last('acme'));
    for (const text of [stored, logs, state]) {
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice('whsec_'.length));
      expect(text).not.toContain('address-secret-part');
      expect(text).not.toContain(String(receiver.url));
    }
  });

  it("refuses a tenant's own URL to this machine unless OUTBOUND_ALLOWED_NETWORKS lists it, by address or by a name resolving there; the error names neither address nor port", async () => {
    const { rig, receiver } = await start(() => 'ok', { env: { NOTIFY_ATTEMPTS: '2', OUTBOUND_ALLOWED_NETWORKS: '' } });
    await rig.sync('acme', 'full');
    const last = await until(() => rig.app.stores.deliveries.last('acme'), (d) => d?.state === 'failed');
    expect(last).toMatchObject({ state: 'failed', attempts: 2, error: 'blocked address' });
    expect(last?.statusCode).toBeUndefined();
    expect(receiver.received).toEqual([]);
    // `localhost` is a name: it resolves to 127.0.0.1 (or ::1) when the connection opens, and is refused there.
    const port = new URL(receiver.url).port;
    rig.app.setTenants(parseTenants(tenantsJson([{ id: 'acme', platform: { kind: 'memory', name: `notify-${Math.random()}` }, extra: { notify: { url: `http://localhost:${port}/hooks/runs`, secret: newSecret() } } }]), {}));
    await rig.sync('acme', 'incremental');
    const byName = await until(() => rig.app.stores.deliveries.last('acme'), (d) => d?.state === 'failed' && d.eventId !== last?.eventId);
    expect(byName).toMatchObject({ error: 'blocked address' });
    expect(receiver.received).toEqual([]);
    const told = `${rig.logs.join('\n')} ${JSON.stringify(await rig.app.queues.notify.getJobs(['failed']))}`;
    expect(told).toContain('blocked address');
    for (const leak of ['127.0.0.1', '::1', 'localhost', `:${port}`]) expect(told).not.toContain(leak);
  });

  it('enqueues nothing for a tenant without a receiver (neither its own nor the fleet\'s)', async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'plain', platform: { kind: 'memory', name: `plain-${Math.random()}` } }] });
    await rig.sync('plain', 'full');
    expect(await rig.app.queues.notify.getJobCountByTypes('completed', 'failed', 'delayed', 'waiting', 'active')).toBe(0);
  });

  it('sends to RUN_WEBHOOK_URL, signed with RUN_WEBHOOK_SECRET, for a tenant without its own (the operator\'s own address: on this machine, and no OUTBOUND_ALLOWED_NETWORKS)', async () => {
    const secret = newSecret();
    receiver = await startReceiver(secret);
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'fleet', platform: { kind: 'memory', name: `fleet-${Math.random()}` } }],
      env: { ...FAST, RUN_WEBHOOK_URL: receiver.url, RUN_WEBHOOK_SECRET: secret },
    });
    await rig.sync('fleet', 'full');
    const [got] = await receiver.waitFor(1);
    expect(got!.valid).toBe(true);
    expect(got!.verified).toMatchObject({ type: 'run.finished', data: { tenantId: 'fleet' } });
  });
});

describe('run webhooks: one event per run', () => {
  const redis = useTestRedis();
  let rig: Rig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a run recorded as finished twice (a crash before its job completed) queues one delivery', async () => {
    const secret = newSecret();
    // No worker: the queue is read as it is.
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: `twice-${Math.random()}` }, extra: { notify: { url: 'https://hooks.example.com/runs', secret } } }],
      worker: false,
    });
    const run = { tenantId: 'acme', runId: 'run-9', mode: 'full' as const, trigger: 'test', outcome: 'succeeded' as const, counts: {}, errors: [], startedAt: Date.now() - 1_000 };
    await rig.app.notify.emit(runFinishedEvent({ ...run, finishedAt: Date.now() }));
    await rig.app.notify.emit(runFinishedEvent({ ...run, finishedAt: Date.now() + 1_000, outcome: 'partial' }));
    const jobs = await rig.app.queues.notify.getJobs(['waiting', 'delayed']);
    expect(jobs).toHaveLength(1);
    expect((jobs[0]!.data as { data: { outcome: string } }).data.outcome).toBe('succeeded');
    expect(jobs[0]!.opts.attempts).toBe(12);
  });
});

describe('run webhooks in the control API', () => {
  const redis = useTestRedis();
  let rig: Rig | undefined;
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await receiver?.close();
    await rig?.close();
  });

  it("GET /v1/tenants shows a tenant's last delivery as lastWebhook", async () => {
    const secret = newSecret();
    const key = 'notify-test-key-Wd5Qx9Tr2Bn7Kz4VmLc8Hs3Jp';
    receiver = await startReceiver(secret);
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'memory', name: `api-${Math.random()}` }, extra: { notify: { url: receiver.url, secret } } },
        { id: 'quiet', platform: { kind: 'memory', name: `api-quiet-${Math.random()}` } },
      ],
      env: { API_KEYS: `ops:${key}`, ...LOCAL },
      worker: { webhookPort: 'random', webhookHost: '127.0.0.1' },
    });
    await rig.sync('acme', 'full');
    const [got] = await receiver.waitFor(1);
    const last = await until(() => rig!.app.stores.deliveries.last('acme'), (d) => d?.state === 'delivered');
    const res = await fetch(`http://127.0.0.1:${rig.worker!.webhooks!.port}/v1/tenants`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { items: { id: string; lastWebhook: unknown }[] };
    expect(body.items.find((t) => t.id === 'acme')?.lastWebhook).toEqual({
      eventId: got!.headers['webhook-id'],
      type: 'run.finished',
      state: 'delivered',
      attempts: 1,
      statusCode: 204,
      at: new Date(last!.at).toISOString(),
    });
    expect(body.items.find((t) => t.id === 'quiet')?.lastWebhook).toBeNull();
  });
});
