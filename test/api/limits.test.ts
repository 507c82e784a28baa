/**
 * The control API mounted on a public server of its own (as src/webhooks mounts it), on a rig without a worker: the
 * rate limit per key (429 with Retry-After, a problem), connect links off (501), a run that waits in the queue (its
 * job answers), and a server with no key configured (the API is off: /v1 is the one 401, the webhooks still work).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountApi, openApiDocument, type ApiDeps } from '../../src/api/index.js';
import { parseApiKeys } from '../../src/config/api-keys.js';
import { Secret } from '../../src/secret.js';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';
import { ApiClient } from '../helpers/openapi.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const KEY = 'limited-key-Gq4Wx9Tn2Rb7Kd5VmLz8Hc3Jp';
const OTHER = 'other-key-Mb6Tq2Wx8Rn4Kd9VzLc7Hs3Jp5F';
const SECRET = 'whsec-acme-0123456789abcdef';

describe('the control API on its own public server', () => {
  const redis = useTestRedis();
  let rig: Rig;
  const servers: WebhookServer[] = [];
  const doc = openApiDocument();

  beforeAll(async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], worker: false });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await rig?.close();
  });

  const deps = (keys: string, ratePerMin: number): ApiDeps => ({
    keys: parseApiKeys(keys).keys,
    ratePerMin,
    redis: rig.app.redis,
    prefix: rig.env.KEY_PREFIX,
    stores: rig.app.stores,
    syncQueue: rig.app.queues.sync,
    tenant: (id) => rig.app.tenant(id),
    tenants: () => rig.app.tenants(),
    logger: rig.app.logger,
  });
  const serve = async (api: ApiDeps | undefined): Promise<ApiClient> => {
    const server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      signatureHeader: 'x-webhook-signature',
      ratePerMin: 100,
      logger: rig.app.logger,
      secretOf: (id) => (id === 'acme' ? new Secret(SECRET) : undefined),
      accept: async () => ({ eventId: 'e1', duplicate: false }),
      ...(api ? { routes: (hono, unauthorized) => mountApi(hono, api, unauthorized) } : {}),
    });
    servers.push(server);
    return new ApiClient(doc, `http://127.0.0.1:${server.port}`);
  };

  it('limits each key to API_RATE_PER_MIN a minute: then 429 with Retry-After, other keys unaffected', async () => {
    const api = await serve(deps(`one:${KEY},two:${OTHER}`, 3));
    for (let i = 0; i < 3; i += 1) expect((await api.call('GET', '/v1/tenants', { key: KEY })).status).toBe(200);
    const limited = await api.call<{ type: string; status: number }>('GET', '/v1/tenants', { key: KEY });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ type: 'about:blank', status: 429 });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await api.call('GET', '/v1/tenants', { key: OTHER })).status).toBe(200);
    // `/v1` itself is a path of the API: one request counted once (a 404 for OTHER's second of three).
    expect((await api.call('GET', '/v1', { key: OTHER })).status).toBe(404);
    expect((await api.call('GET', '/v1/tenants', { key: OTHER })).status).toBe(200);
    expect((await api.call('GET', '/v1/tenants', { key: OTHER })).status).toBe(429);
    // Unauthenticated requests are not counted against a key, and still get the one 401.
    expect((await api.call('GET', '/v1/tenants')).status).toBe(401);
  });

  it('answers 501 for connect links when they are off, and a queued run from its job', async () => {
    const api = await serve(deps(`one:${KEY}`, 100));
    const off = await api.call<{ type: string }>('POST', '/v1/tenants/acme/connect-links', { key: KEY, body: {} });
    expect(off.status).toBe(501);
    expect(off.body.type).toBe('tag:collections-sync,2026:problem/connect-links-off');
    const asked = await api.call<{ runId: string; deduplicated: boolean; links: { run: string } }>('POST', '/v1/tenants/acme/runs', { key: KEY, body: { mode: 'incremental' } });
    expect(asked.status).toBe(202);
    expect(asked.body.deduplicated).toBe(false);
    const queued = await api.call<{ state: string; outcome: null; startedAt: null }>('GET', asked.body.links.run, { key: KEY });
    expect(queued.body).toMatchObject({ state: 'queued', outcome: null, startedAt: null });
    // The same request again joins the queued run (the producer's deduplication, as the CLI's).
    const joined = await api.call<{ runId: string; deduplicated: boolean }>('POST', '/v1/tenants/acme/runs', { key: KEY, body: { mode: 'incremental' } });
    expect(joined.body).toMatchObject({ runId: asked.body.runId, deduplicated: true });
    await rig.app.queues.sync.obliterate({ force: true });
  });

  it('is off without keys: /v1 answers the one 401 even with a key, and the webhooks still work', async () => {
    const api = await serve(undefined);
    const one = await api.call('POST', '/webhooks/nowhere', { raw: '{}' });
    for (const path of ['/v1/tenants', '/v1/openapi.json']) {
      // Not the API's answer (it is off): read without the document's check.
      const got = await fetch(`${api.base}${path}`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(got.status).toBe(401);
      expect(await got.text()).toBe(one.text);
    }
    const hook = await fetch(`${api.base}/webhooks/calls/acme`, { method: 'POST', body: '{"id":"x"}', headers: { 'content-type': 'application/json', authorization: `Bearer ${SECRET}` } });
    expect(hook.status).toBe(200);
  });
});
