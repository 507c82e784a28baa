/**
 * Events over the control API, end to end over real HTTP against the worker's public server, a real Redis and a real
 * receiver (verifying with the `standardwebhooks` package): a receiver that is down misses three run.finished events,
 * and the app finds them in `GET /v1/events` under the webhook-ids they were sent with, a page of one at a time; the
 * type filter; a key limited to one tenant sees its events only; a redelivery sends the same id again; a signed
 * webhook.test; tenant.* events on create, patch and delete, without a secret. Every answer is checked against the
 * generated OpenAPI document.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { openApiDocument } from '../../src/api/index.js';
import { ApiClient, type Answer } from '../helpers/openapi.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { newSecret, startReceiver, until, type Receiver } from '../notify/receiver.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';

const FULL = 'full-key-Ur7Kd2Wq9XbN4tLm8VzHc3Jp6Fs5Gy';
const ACME_ONLY = 'acme-key-Pn5Dx8Qw2Ha7Rk4VmLz9Tc3Jb6Fs';
const PLATFORM = `api-events-${process.pid}-${Date.now()}`;
const ZETA_SECRET = 'zeta-client-secret-Hq7Wm2Kx9';
const T = '2026-11-02T08:15:00.000Z';

type Delivery = { state: string; attempts: number; statusCode?: number; error?: string };
type Event = { id: string; type: string; timestamp: string; tenantId: string; data: Record<string, unknown>; delivery: Delivery };
type Page = { items: Event[]; next: string | null };
type Problem = { type: string; status: number };

describe('events over the control API', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let receiver: Receiver;
  let api: ApiClient;
  let secret: string;
  /** The receiver answers 503 while down. */
  let down = true;
  const runs: string[] = [];

  const run = async (): Promise<string> => {
    // The last run's job is over (completed, not only its run record finished): this request is a run of its own.
    const asked = await api.call<{ runId: string; jobId: string; deduplicated: boolean; links: { run: string } }>('POST', '/v1/tenants/acme/runs', { key: FULL, body: { mode: 'full' } });
    expect(asked.status).toBe(202);
    expect(asked.body.deduplicated).toBe(false);
    await until(async () => (await api.call<{ state: string }>('GET', asked.body.links.run, { key: FULL })).body, (r) => r.state === 'finished', 60_000);
    await until(() => rig.app.queues.sync.getJobState(asked.body.jobId), (s) => s === 'completed' || s === 'unknown', 60_000);
    return asked.body.runId;
  };
  const events = async (query: string, key = FULL): Promise<Event[]> => {
    const items: Event[] = [];
    for (let next: string | null = '', pages = 0; next !== null; pages += 1) {
      const page: Answer<Page> = await api.call<Page>('GET', `/v1/events?${query}${next === '' ? '' : `&after=${next}`}`, { key });
      expect(page.status).toBe(200);
      items.push(...page.body.items);
      next = page.body.next;
      expect(pages).toBeLessThan(50);
    }
    return items;
  };

  beforeAll(async () => {
    secret = newSecret();
    receiver = await startReceiver(secret, () => (down ? 503 : 'ok'));
    const port = await freePort();
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'memory', name: PLATFORM }, extra: { notify: { url: receiver.url, secret } } },
        { id: 'beta', platform: { kind: 'memory', name: `${PLATFORM}-beta` } },
      ],
      simulator: {
        clients: [
          { clientId: 'client-acme', clientSecret: 'secret-acme-x9' },
          { clientId: 'client-beta', clientSecret: 'secret-beta-x9' },
          { clientId: 'client-zeta', clientSecret: ZETA_SECRET },
        ],
      },
      env: {
        WEBHOOK_PORT: String(port),
        WEBHOOK_HOST: '127.0.0.1',
        PLATFORM_TOKEN_KEY: TOKEN_KEY,
        API_KEYS: `full:${FULL}\nacme-only:${ACME_ONLY}:acme`,
        // One attempt: a receiver that is down misses the event for good (but for the log and a redelivery).
        NOTIFY_ATTEMPTS: '1',
        OUTBOUND_ALLOWED_NETWORKS: '127.0.0.0/8',
      },
    });
    rig.memory.get(PLATFORM).upsert('contacts', { id: 'C1', updatedAt: T, name: 'Company C1' });
    api = new ApiClient(openApiDocument(), `http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await receiver?.close();
    await rig?.close();
  });

  it('a receiver that was down missed three run.finished; GET /v1/events has them under the same webhook-ids, a page of one at a time', async () => {
    for (let i = 0; i < 3; i += 1) runs.push(await run());
    const missed = await receiver.waitFor(3, 30_000);
    expect(missed.every((r) => r.valid)).toBe(true);
    const ids = missed.map((r) => String(r.headers['webhook-id']));
    expect(new Set(ids).size).toBe(3);
    // the failed attempts are recorded before the app looks
    const failed = await until(() => events('type=run.finished&limit=100'), (es) => es.length === 3 && es.every((e) => e.delivery.state === 'failed'));
    expect(failed.map((e) => e.id)).toEqual(ids);
    expect(failed.map((e) => e.data['runId'])).toEqual(runs);
    expect(failed[0]).toMatchObject({ type: 'run.finished', tenantId: 'acme', delivery: { state: 'failed', attempts: 1, statusCode: 503, error: 'http 503' } });
    // the counts nested as the run's view has them, in the webhook as in the API
    const view = await api.call<{ counts: unknown }>('GET', `/v1/tenants/acme/runs/${runs[0]!}`, { key: FULL });
    expect(failed[0]!.data['counts']).toEqual(view.body.counts);
    expect((JSON.parse(missed[0]!.body) as { data: { counts: unknown } }).data.counts).toEqual(view.body.counts);

    // limit=1: three pages, the last with next null
    const pages: Page[] = [];
    let next: string | null = null;
    do {
      const page: { body: Page } = await api.call<Page>('GET', `/v1/events?type=run.finished&limit=1${next === null ? '' : `&after=${next}`}`, { key: FULL });
      pages.push(page.body);
      next = page.body.next;
    } while (next !== null && pages.length < 10);
    expect(pages.map((p) => p.items.map((e) => e.id))).toEqual(ids.map((id) => [id]));
    expect(pages[2]!.next).toBeNull();
    // after may name an event id: what came after it
    expect((await api.call<Page>('GET', `/v1/events?type=run.finished&after=${ids[0]!}`, { key: FULL })).body.items.map((e) => e.id)).toEqual(ids.slice(1));
    const bad = await api.call<Problem>('GET', '/v1/events?after=not-a-cursor', { key: FULL });
    expect([bad.status, bad.body.type]).toEqual([400, 'tag:collections-sync,2026:problem/invalid-query']);

    // order=newest: the same events the other way, a page of one at a time; after an id, those recorded before it
    const newest: string[][] = [];
    let back: string | null = null;
    do {
      const page: { body: Page } = await api.call<Page>('GET', `/v1/events?type=run.finished&order=newest&limit=1${back === null ? '' : `&after=${back}`}`, { key: FULL });
      newest.push(page.body.items.map((e) => e.id));
      back = page.body.next;
    } while (back !== null && newest.length < 10);
    expect(newest).toEqual([...ids].reverse().map((id) => [id]));
    expect((await api.call<Page>('GET', `/v1/events?type=run.finished&order=newest&after=${ids[2]!}`, { key: FULL })).body.items.map((e) => e.id)).toEqual([ids[1], ids[0]]);
    // a cursor of one order is not one of the other
    const first = await api.call<Page>('GET', '/v1/events?type=run.finished&limit=1', { key: FULL });
    const crossed = await api.call<Problem>('GET', `/v1/events?type=run.finished&order=newest&after=${first.body.next ?? ''}`, { key: FULL });
    expect([crossed.status, crossed.body.type]).toEqual([400, 'tag:collections-sync,2026:problem/invalid-query']);
    // a run's summary carries its totals and errors, as its full view counts them
    const listed = await api.call<{ items: { runId: string; totals: Record<string, number>; errorCount: number; firstError: string | null }[] }>('GET', '/v1/tenants/acme/runs?limit=5', { key: FULL });
    const summary = listed.body.items.find((r) => r.runId === runs[0]);
    const full = await api.call<{ counts: { total: Record<string, number> }; errors: string[]; errorsOmitted: number }>('GET', `/v1/tenants/acme/runs/${runs[0]!}`, { key: FULL });
    expect(summary?.totals).toEqual(full.body.counts.total);
    expect(summary?.errorCount).toBe(full.body.errors.length + full.body.errorsOmitted);
    expect(summary?.firstError).toBe(full.body.errors[0] ?? null);
  });

  it('redelivers an event under the same id; a tenant without a receiver is refused, an unknown id is 404', async () => {
    down = false;
    const [first] = await events('type=run.finished&tenantId=acme');
    const before = receiver.received.length;
    const asked = await api.call<{ id: string; redelivery: string }>('POST', `/v1/events/${first!.id}/redeliver`, { key: FULL });
    expect(asked.status).toBe(202);
    expect(asked.body).toMatchObject({ id: first!.id, redelivery: 'queued' });
    const got = (await receiver.waitFor(before + 1))[before]!;
    expect(got.valid).toBe(true);
    expect(got.headers['webhook-id']).toBe(first!.id);
    expect(got.body).toBe(JSON.stringify({ type: first!.type, timestamp: first!.timestamp, data: first!.data }));
    const after = await until(async () => (await api.call<Event>('GET', `/v1/events/${first!.id}`, { key: FULL })).body, (e) => e.delivery.state === 'delivered');
    expect(after.delivery).toMatchObject({ state: 'delivered', attempts: 1, statusCode: 204 });

    // beta has no receiver: its run's event is kept all the same, and cannot be redelivered
    const asked2 = await api.call<{ links: { run: string } }>('POST', '/v1/tenants/beta/runs', { key: FULL, body: { mode: 'full' } });
    const [beta] = await until(() => events('tenantId=beta&type=run.finished'), (es) => es.length === 1);
    expect(beta!.delivery.state).toBe('no_receiver');
    expect(asked2.status).toBe(202);
    const refused = await api.call<Problem>('POST', `/v1/events/${beta!.id}/redeliver`, { key: FULL });
    expect([refused.status, refused.body.type]).toEqual([409, 'tag:collections-sync,2026:problem/no-receiver']);
    expect((await api.call<Problem>('POST', `/v1/events/msg_${'0'.repeat(32)}/redeliver`, { key: FULL })).status).toBe(404);
    expect((await api.call<Problem>('GET', '/v1/events/nope', { key: FULL })).status).toBe(404);
  });

  it('sends a signed webhook.test to the tenant\'s receiver, kept out of the log', async () => {
    const before = receiver.received.length;
    const sent = await api.call<{ eventId: string; tenantId: string; delivered: boolean; statusCode: number | null; error: string | null }>('POST', '/v1/webhooks/test', { key: FULL, body: { tenantId: 'acme' } });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ tenantId: 'acme', delivered: true, statusCode: 204, error: null });
    const got = receiver.received[before]!;
    expect(got.headers['webhook-id']).toBe(sent.body.eventId);
    // verified with the tenant's secret, not with another
    expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).toMatchObject({ type: 'webhook.test', data: { tenantId: 'acme' } });
    expect(() => new Webhook(newSecret()).verify(got.body, got.headers as Record<string, string>)).toThrow();
    expect((await api.call('GET', `/v1/events/${sent.body.eventId}`, { key: FULL })).status).toBe(404);
    const none = await api.call<Problem>('POST', '/v1/webhooks/test', { key: FULL, body: { tenantId: 'beta' } });
    expect([none.status, none.body.type]).toEqual([409, 'tag:collections-sync,2026:problem/no-receiver']);
    expect((await api.call('POST', '/v1/webhooks/test', { key: ACME_ONLY, body: { tenantId: 'beta' } })).status).toBe(404);
  });

  it('tells tenant.created, tenant.updated (the fields changed) and tenant.deleted, never a secret', async () => {
    const hookSecret = newSecret();
    const entry = { id: 'zeta', collections: { clientId: 'client-zeta', clientSecret: ZETA_SECRET }, platform: { kind: 'memory', name: `${PLATFORM}-zeta` }, notify: { url: receiver.url, secret: hookSecret } };
    const made = await api.call('POST', '/v1/tenants', { key: FULL, body: entry });
    expect(made.status).toBe(201);
    const patched = await api.call('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: 3, collections: { clientSecret: `${ZETA_SECRET}-new` } }, headers: { 'content-type': 'application/merge-patch+json' } });
    expect(patched.status).toBe(200);
    // a patch that changes nothing tells nothing
    expect((await api.call('PATCH', '/v1/tenants/zeta', { key: FULL, body: { inFlightLimit: 3 }, headers: { 'content-type': 'application/merge-patch+json' } })).status).toBe(200);
    expect((await api.call('DELETE', '/v1/tenants/zeta', { key: FULL })).status).toBe(204);

    const told = await events('tenantId=zeta');
    expect(told.map((e) => e.type)).toEqual(['tenant.created', 'tenant.updated', 'tenant.deleted']);
    expect(told.map((e) => e.data)).toEqual([
      { tenantId: 'zeta', source: 'api', platform: 'memory' },
      { tenantId: 'zeta', source: 'api', changed: ['collections', 'inFlightLimit'] },
      { tenantId: 'zeta', source: 'api' },
    ]);
    // created and updated went to zeta's own receiver, signed with its secret; deleted has no receiver (no RUN_WEBHOOK_URL)
    const delivered = await until(() => events('tenantId=zeta'), (es) => es[0]!.delivery.state === 'delivered' && es[1]!.delivery.state === 'delivered');
    expect(delivered[2]!.delivery.state).toBe('no_receiver');
    const bodies = receiver.received.filter((r) => told.slice(0, 2).some((e) => e.id === r.headers['webhook-id']));
    expect(bodies).toHaveLength(2);
    expect(bodies.every((r) => new Webhook(hookSecret).verify(r.body, r.headers as Record<string, string>) !== undefined)).toBe(true);
    const text = JSON.stringify(told) + bodies.map((r) => r.body).join('');
    for (const s of [ZETA_SECRET, hookSecret, hookSecret.slice(6)]) expect(text).not.toContain(s);
  });

  it('a key limited to acme sees acme\'s events only', async () => {
    const all = await events('limit=100');
    expect(new Set(all.map((e) => e.tenantId))).toEqual(new Set(['acme', 'beta', 'zeta']));
    const mine = await events('limit=100', ACME_ONLY);
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.map((e) => e.id)).toEqual(all.filter((e) => e.tenantId === 'acme').map((e) => e.id));
    expect(await events('tenantId=beta', ACME_ONLY)).toEqual([]);
    const beta = all.find((e) => e.tenantId === 'beta')!;
    expect((await api.call('GET', `/v1/events/${beta.id}`, { key: ACME_ONLY })).status).toBe(404);
    expect((await api.call('POST', `/v1/events/${beta.id}/redeliver`, { key: ACME_ONLY })).status).toBe(404);
    // the type filter
    expect((await events('type=tenant.created')).map((e) => [e.type, e.tenantId])).toEqual([['tenant.created', 'zeta']]);
  });
});
