/**
 * QuickBooks change notifications on the webhook receiver (issue 15 item 6): `intuit-signature` (base64
 * HMAC-SHA256 of the raw body under the app's verifier token) is checked; a valid notification requests exactly
 * one incremental run of the realm's tenant however often it comes in a burst (debounced, deduplicated); a bad
 * signature changes nothing; a realm of no tenant is logged and ignored; a body over MAX_QUICKBOOKS_BODY_BYTES is
 * refused unread. Without a tenant that has a verifier token the route is not served: the request is answered from
 * its headers, as an unknown path. The worker here works the calls queue only, so the requested run stays queued
 * where the test can count it.
 */
import { createHmac } from 'node:crypto';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTenants } from '../../src/config/tenants.js';
import { JOBS } from '../../src/queues/index.js';
import { quickBooksWebhook } from '../../src/platforms/quickbooks/webhook.js';

const MAX_QUICKBOOKS_BODY_BYTES = quickBooksWebhook.maxBodyBytes;
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';

const VERIFIER = 'qbo-verifier-token-0123456789';
const OTHER_VERIFIER = 'qbo-verifier-token-of-another-app';
const qbo = (id: string, realmId: string, verifier: string, clientId: string) => ({
  id,
  platform: { kind: 'quickbooks', clientId, clientSecret: `${clientId}-secret`, refreshToken: `${id}-refresh`, realmId, environment: 'sandbox', webhookVerifierToken: verifier },
});

describe('QuickBooks change notifications', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let url: string;
  const notification = (...realms: string[]) =>
    JSON.stringify({
      eventNotifications: realms.map((realmId) => ({
        realmId,
        dataChangeEvent: { entities: [{ name: 'Invoice', id: '1042', operation: 'Update', lastUpdated: '2026-11-25T10:00:00.000Z' }] },
      })),
    });
  const sign = (body: string, token = VERIFIER) => createHmac('sha256', token).update(body).digest('base64');
  const post = (body: string, signature: string | undefined) =>
    fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...(signature === undefined ? {} : { 'intuit-signature': signature }) } });
  const syncJobs = async () => (await rig.app.queues.sync.getJobs(['waiting', 'delayed', 'active', 'completed', 'failed'])).filter((j) => j.name === JOBS.sync.name);

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [qbo('books', '9130350000000001', VERIFIER, 'qbo-app'), qbo('books-two', '9130350000000002', OTHER_VERIFIER, 'qbo-app-two')],
      env: { PLATFORM_TOKEN_KEY: 'a'.repeat(64) },
      worker: { queues: ['calls'], webhookPort: 'random', webhookHost: '127.0.0.1' },
      logLevel: 'info',
    });
    url = `http://127.0.0.1:${rig.worker!.webhooks!.port}/webhooks/quickbooks`;
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('refuses a bad or missing signature, and one made with another app\'s token for this realm, requesting nothing', async () => {
    const body = notification('9130350000000001');
    expect((await post(body, sign(body, 'not-the-verifier-token'))).status).toBe(401);
    expect((await post(body, undefined)).status).toBe(401);
    expect((await post(body, 'bm90IGJhc2U2NCBvZiBhbiBITUFD')).status).toBe(401);
    // Signed by the other app: it verifies, but this realm is not that app's tenant's.
    const answer = await post(body, sign(body, OTHER_VERIFIER));
    expect(answer.status).toBe(200);
    expect(await syncJobs()).toEqual([]);
  });

  it('a valid notification posted 3 times quickly requests exactly one incremental run of that tenant', async () => {
    const body = notification('9130350000000001');
    const answers = await Promise.all([post(body, sign(body)), post(body, sign(body)), post(body, sign(body))]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    const jobs = await syncJobs();
    expect(jobs).toHaveLength(1);
    expect(jobs[0]?.data).toMatchObject({ tenantId: 'books', mode: 'incremental', trigger: 'webhook' });
    expect(await jobs[0]?.getState()).toBe('delayed');
    expect(rig.logs.filter((l) => l.includes('incremental run requested'))).toHaveLength(3);
  });

  it('ignores a realm of no tenant with a log line', async () => {
    const body = notification('4620816365000000999');
    expect((await post(body, sign(body))).status).toBe(200);
    expect(rig.logs.filter((l) => l.includes('4620816365000000999') && l.includes('connection of no tenant'))).toHaveLength(1);
    expect((await syncJobs()).map((j) => (j.data as { tenantId: string }).tenantId)).toEqual(['books']);
    const text = await rig.metrics.registry.metrics();
    expect(text).toContain('collections_sync_webhook_events_total{tenant="books",outcome="sync_requested"} 3');
    expect(text).toContain('collections_sync_webhook_events_total{tenant="(unknown)",outcome="ignored"} 2');
    expect(text).toContain('collections_sync_webhook_events_total{tenant="(unknown)",outcome="refused"} 3');
  });
});

describe('QuickBooks change notifications: the route is served only while a tenant has a verifier token', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let port: number;
  const body = JSON.stringify({ eventNotifications: [{ realmId: '9130350000000001', dataChangeEvent: { entities: [] } }] });
  const signed = createHmac('sha256', VERIFIER).update(body).digest('base64');
  /** Sends the headers of a POST of `length` bytes and the first 10 bytes of it; resolves with the answer's status line, or 'no answer'. */
  const partialPost = (path: string, length: number, waitMs: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      const timer = setTimeout(() => (socket.destroy(), resolve('no answer')), waitMs);
      socket.on('data', (d: Buffer) => {
        got += d.toString('latin1');
        if (!got.includes('\r\n')) return;
        clearTimeout(timer);
        socket.destroy();
        resolve(got.slice(0, got.indexOf('\r\n')));
      });
      socket.on('error', reject);
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nintuit-signature: ${signed}\r\nContent-Length: ${length}\r\n\r\n{"eventNot`);
    });

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: redis.url,
      // A QuickBooks tenant without webhookVerifierToken: notifications cannot be verified, so none are taken.
      tenants: [{ ...qbo('books', '9130350000000001', VERIFIER, 'qbo-app'), platform: { ...qbo('books', '9130350000000001', VERIFIER, 'qbo-app').platform, webhookVerifierToken: undefined } }],
      env: { PLATFORM_TOKEN_KEY: 'a'.repeat(64), SERVER_REQUEST_TIMEOUT_MS: '20000', SERVER_HEADERS_TIMEOUT_MS: '20000' },
      worker: { queues: ['calls'], webhookPort: 'random', webhookHost: '127.0.0.1' },
    });
    port = rig.worker!.webhooks!.port;
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('without a verifier token, answers from the headers as an unknown path does: no body read, no HMAC, nothing counted', async () => {
    // The body is announced as 500 KiB and never sent: a route that reads it would answer only at the request timeout (20 s).
    expect(await partialPost('/webhooks/quickbooks', 500 * 1024, 5_000)).toBe('HTTP/1.1 401 Unauthorized');
    expect(await partialPost('/webhooks/nowhere', 500 * 1024, 5_000)).toBe('HTTP/1.1 401 Unauthorized');
    const full = await fetch(`http://127.0.0.1:${port}/webhooks/quickbooks`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'intuit-signature': signed } });
    const unknown = await fetch(`http://127.0.0.1:${port}/webhooks/nowhere`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'intuit-signature': signed } });
    expect([full.status, await full.text()]).toEqual([unknown.status, await unknown.text()]);
    expect(await rig.metrics.registry.getSingleMetricAsString('collections_sync_webhook_events_total')).not.toContain('outcome=');
  });

  it('serves it once the tenants file gives a verifier token, and refuses a body over its cap unread (Intuit sends a few KB)', async () => {
    rig.app.setTenants(parseTenants(tenantsJson([qbo('books', '9130350000000001', VERIFIER, 'qbo-app')]), {}));
    const ok = await fetch(`http://127.0.0.1:${port}/webhooks/quickbooks`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'intuit-signature': signed } });
    expect(ok.status).toBe(200);
    expect(MAX_QUICKBOOKS_BODY_BYTES).toBeLessThanOrEqual(64 * 1024);
    // A real notification padded past the cap and signed with the right token: refused before its HMAC is computed.
    const padded = JSON.stringify({ eventNotifications: [{ realmId: '9130350000000001', dataChangeEvent: { entities: Array.from({ length: 1500 }, (_, i) => ({ name: 'Invoice', id: String(i), operation: 'Update', lastUpdated: '2026-11-25T10:00:00.000Z' })) } }] });
    expect(padded.length).toBeGreaterThan(MAX_QUICKBOOKS_BODY_BYTES);
    expect(padded.length).toBeLessThan(512 * 1024);
    const big = await fetch(`http://127.0.0.1:${port}/webhooks/quickbooks`, { method: 'POST', body: padded, headers: { 'content-type': 'application/json', 'intuit-signature': createHmac('sha256', VERIFIER).update(padded).digest('base64') } });
    expect(big.status).toBe(401);
    expect(rig.logs.some((l) => l.includes('"reason":"too_large"'))).toBe(true);
  });
});
