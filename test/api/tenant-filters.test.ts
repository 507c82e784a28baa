/**
 * What the operator's console asks of the control API, over real HTTP against the worker's public server (started
 * here on a rig without a worker, so no run changes the states set up) and a real Redis: the tenant list filtered by
 * `q` and `state`, paged by its cursor; a key limited to some tenants sees none other through them; `schedule` and
 * `nextRunAt` (the schedulers' next tick, as BullMQ answers it); revoking a tenant's connection (the CLI's `connect
 * revoke`, its `connection.changed` event). Then the list filtered over 10,000 tenants, timed. Every answer is checked
 * against the generated document.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiApp, mountApi, openApiDocument, type ApiDeps } from '../../src/api/index.js';
import { parseApiKeys } from '../../src/config/api-keys.js';
import { tenantSchema, type TenantConfig } from '../../src/config/tenants.js';
import { jobId } from '../../src/queues/index.js';
import { ensureTickSchedules } from '../../src/queues/schedulers.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import { PlatformAuth } from '../../src/platforms/oauth/oauth.js';
import { PlatformTokenStore } from '../../src/platforms/oauth/token-store.js';
import { xeroOAuth } from '../../src/platforms/xero/oauth.js';
import { Secret } from '../../src/secret.js';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';
import { startPublicServer } from '../../src/worker/public-server.js';
import { ApiClient } from '../helpers/openapi.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';

const FULL = 'full-key-Ur7Kd2Wq9XbN4tLm8VzHc3Jp6Fs5Gy';
const LIMITED = 'acme-kiwi-key-Pn5Dx8Qw2Ha7Rk4VmLz9Tc3Jb6';
const KIWI_ORG = '8f6c2c1e-2b7a-4c55-9d1e-0a1b2c3d4e5f';
const MANGO_ORG = '1a2b3c4d-0000-4c55-9d1e-0a1b2c3d4e5f';

type Problem = { type: string; status: number; detail: string; errors?: { in: string; path: (string | number)[]; message: string }[] };
type View = {
  id: string;
  connection: { state: string; name?: string } | null;
  running: boolean;
  lastRun: { outcome: string | null } | null;
  deadLetters: { total: number };
  schedule: { everyMs: number | null; cron: string | null; tz: string | null; reconcileEveryMs: number };
  nextRunAt: string | null;
};
type List = { items: View[]; next: string | null };

/** The sheep: memory tenants enough for several pages; every third one's last run failed. */
const SHEEP = Array.from({ length: 25 }, (_, i) => `sheep-${String(i + 1).padStart(2, '0')}`);
const FAILING_SHEEP = SHEEP.filter((_, i) => i % 3 === 0);

describe('the tenant list filtered, the schedule, and revoking a connection', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let server: WebhookServer;
  let api: ApiClient;
  let xero: Server;
  const deleted: string[] = [];

  beforeAll(async () => {
    // Xero's connections endpoint, for the revoke: DELETE /connections/{id} answers 204.
    xero = createServer((req, res) => {
      if (req.method === 'DELETE') deleted.push(req.url ?? '');
      res.writeHead(req.method === 'DELETE' ? 204 : 404).end();
    });
    await new Promise<void>((resolve) => xero.listen(0, '127.0.0.1', resolve));
    const xeroPort = (xero.address() as { port: number }).port;
    const xeroTenant = (clientId: string) => ({ kind: 'xero', clientId, clientSecret: 'xero-secret', connectionsUrl: `http://127.0.0.1:${xeroPort}/connections` });
    const port = await freePort();
    rig = await startRig({
      redisUrl: redis.url,
      worker: false,
      tenants: [
        { id: 'acme', platform: { kind: 'memory', name: 'acme' } },
        { id: 'bravo', platform: { kind: 'memory', name: 'bravo' } },
        { id: 'charlie', platform: { kind: 'memory', name: 'charlie' } },
        { id: 'delta', platform: { kind: 'memory', name: 'delta' }, extra: { schedule: { cron: '0 6 * * *', tz: 'Asia/Riyadh' } } },
        { id: 'echo', platform: { kind: 'memory', name: 'echo' } },
        { id: 'foxtrot', platform: { kind: 'memory', name: 'foxtrot' }, extra: { schedule: { every: '5m', reconcileEvery: '12h' } } },
        { id: 'kiwi', platform: xeroTenant('KIWICLIENT') },
        { id: 'lime', platform: xeroTenant('LIMECLIENT') },
        { id: 'mango', platform: xeroTenant('MANGOCLIENT') },
        ...SHEEP.map((id) => ({ id, platform: { kind: 'memory', name: id } })),
      ],
      env: { WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', PLATFORM_TOKEN_KEY: TOKEN_KEY, API_KEYS: `full:${FULL}\nacme-kiwi:${LIMITED}:acme|kiwi` },
    });
    server = await startPublicServer(rig.app, { port, host: '127.0.0.1' });
    api = new ApiClient(openApiDocument(), `http://127.0.0.1:${port}`);

    const { runs, deadLetters, runLock } = rig.app.stores;
    let at = Date.now() - 60_000;
    const ran = async (tenant: string, outcome: 'succeeded' | 'partial' | 'failed' | 'waiting'): Promise<void> => {
      at += 1000;
      const runId = `run-${tenant}-${at}`;
      await runs.start(tenant, { runId, mode: 'incremental', startedAt: at, trigger: 'schedule' });
      await runs.finish(tenant, runId, { outcome, finishedAt: at + 500, counts: {}, errors: outcome === 'failed' ? ['boom'] : [] });
    };
    // acme: failed after a success (the last run counts); bravo: partial; charlie: succeeded, a dead letter left.
    await ran('acme', 'succeeded');
    await ran('acme', 'failed');
    await ran('bravo', 'failed');
    await ran('bravo', 'partial');
    await ran('charlie', 'succeeded');
    await deadLetters.add('charlie', [{ entity: 'contacts', platformId: 'C9', reason: 'refused', code: 'COLLECTIONS_REJECTED', runId: 'run-x', at }]);
    await ran('delta', 'waiting');
    // echo: a run under way (it holds the run lock), its last finished run failed: running, not failing.
    await ran('echo', 'failed');
    await runs.start('echo', { runId: 'run-echo-now', mode: 'incremental', startedAt: at + 5000, trigger: 'api' });
    await runLock.acquire('echo', 'test-worker', 60_000);
    for (const id of FAILING_SHEEP) await ran(id, 'failed');
    for (const id of SHEEP.filter((s) => !FAILING_SHEEP.includes(s))) await ran(id, 'succeeded');
    // kiwi: connected with a link (its organisation's name); mango: a chain no key of this worker opens; lime: none.
    const chain = (org: string, clientId: string, key: string) =>
      new PlatformAuth({ platform: xeroOAuth.chain, redis: rig.app.redis, prefix: rig.env.KEY_PREFIX, connection: org, clientId, clientSecret: new Secret('xero-secret'), tokenUrl: 'http://127.0.0.1:9/token', cipher: TokenCipher.fromText(key), dispatcher: new Agent() });
    await chain(KIWI_ORG, 'KIWICLIENT', TOKEN_KEY).connect({ refreshToken: 'refresh-of-kiwi', accessToken: 'access-of-kiwi', expiresInS: 1800 });
    await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).set('kiwi', { platform: 'xero', connection: KIWI_ORG, name: 'Kiwi Orchard Ltd', connectionId: 'conn-kiwi', connectedAt: Date.now() });
    await chain(MANGO_ORG, 'MANGOCLIENT', randomBytes(32).toString('base64')).connect({ refreshToken: 'refresh-of-mango', accessToken: 'access-of-mango', expiresInS: 1800 });
    await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).set('mango', { platform: 'xero', connection: MANGO_ORG, connectedAt: Date.now() });
  });
  afterAll(async () => {
    await server?.close();
    await rig?.close();
    await new Promise<void>((resolve) => (xero ? xero.close(() => resolve()) : resolve()));
  });

  /** Every page of the list with this query, following `next`. */
  const pages = async (query: string, key = FULL): Promise<{ ids: string[]; pages: number }> => {
    const ids: string[] = [];
    let cursor: string | null = null;
    let n = 0;
    do {
      const got: { status: number; body: List } = await api.call<List>('GET', `/v1/tenants?${query}${cursor === null ? '' : `&cursor=${cursor}`}`, { key });
      expect(got.status, query).toBe(200);
      ids.push(...got.body.items.map((t) => t.id));
      cursor = got.body.next;
      n += 1;
    } while (cursor !== null && n < 100);
    return { ids, pages: n };
  };
  const ids = async (query: string, key = FULL): Promise<string[]> => (await pages(`${query}&limit=100`, key)).ids;

  it('selects the tenants in each state, exactly, as their views show it', async () => {
    expect(await ids('state=failing')).toEqual(['acme', ...FAILING_SHEEP]);
    expect(await ids('state=partial')).toEqual(['bravo', 'charlie']);
    expect(await ids('state=waiting')).toEqual(['delta', 'lime']);
    expect(await ids('state=running')).toEqual(['echo']);
    expect(await ids('state=connected')).toEqual(['kiwi']);
    expect(await ids('state=awaiting_connection')).toEqual(['lime']);
    expect(await ids('state=needs_reconnect')).toEqual(['mango']);
    // Each state as the unfiltered list shows it.
    const all = (await api.call<List>('GET', '/v1/tenants?limit=100', { key: FULL })).body.items;
    const shown = (pick: (t: View) => boolean) => all.filter(pick).map((t) => t.id);
    expect(await ids('state=failing')).toEqual(shown((t) => t.lastRun?.outcome === 'failed'));
    expect(await ids('state=partial')).toEqual(shown((t) => t.lastRun?.outcome === 'partial' || t.deadLetters.total > 0));
    expect(await ids('state=waiting')).toEqual(shown((t) => t.lastRun?.outcome === 'waiting' || t.connection?.state === 'awaiting_connection'));
    expect(await ids('state=running')).toEqual(shown((t) => t.running));
    for (const s of ['connected', 'needs_reconnect', 'awaiting_connection']) expect(await ids(`state=${s}`)).toEqual(shown((t) => t.connection?.state === s));
  });

  it('searches ids case-insensitively, and the organisation name of a tenant connected with a link', async () => {
    expect(await ids('q=SHEEP-0')).toEqual(SHEEP.slice(0, 9));
    expect(await ids('q=orchard')).toEqual(['kiwi']);
    expect(await ids('q=%20Kiwi%20')).toEqual(['kiwi']);
    expect(await ids('q=nothing-like-it')).toEqual([]);
    // Both: a tenant must match each.
    expect(await ids('q=sheep&state=failing')).toEqual(FAILING_SHEEP);
    expect(await ids('q=a&state=failing')).toEqual(['acme']);
    // Empty: no filter.
    expect((await ids('q=')).length).toBe(9 + SHEEP.length);
  });

  it('pages a filter by the same cursor: each match once, pages full until the last, next null there', async () => {
    const paged = await pages('state=failing&limit=3');
    expect(paged.ids).toEqual(['acme', ...FAILING_SHEEP]);
    expect(paged.pages).toBe(Math.ceil((1 + FAILING_SHEEP.length) / 3));
    const searched = await pages('q=sheep&limit=4');
    expect(searched.ids).toEqual(SHEEP);
    expect(searched.pages).toBe(Math.ceil(SHEEP.length / 4));
    // One page exactly full: no next (the page looked one further).
    const one = await api.call<List>('GET', `/v1/tenants?state=running&limit=1`, { key: FULL });
    expect([one.body.items.map((t) => t.id), one.body.next]).toEqual([['echo'], null]);
  });

  it('shows a key limited to some tenants none other through q or state', async () => {
    expect(await ids('state=failing', LIMITED)).toEqual(['acme']);
    expect(await ids('state=partial', LIMITED)).toEqual([]);
    expect(await ids('state=connected', LIMITED)).toEqual(['kiwi']);
    expect(await ids('state=needs_reconnect', LIMITED)).toEqual([]);
    expect(await ids('q=e', LIMITED)).toEqual(['acme']);
    expect(await ids('q=orchard', LIMITED)).toEqual(['kiwi']);
    expect((await pages('limit=1', LIMITED)).ids).toEqual(['acme', 'kiwi']);
  });

  it('refuses a q over 100 characters and a state it does not know, naming them (400)', async () => {
    const long = await api.call<Problem>('GET', `/v1/tenants?q=${'a'.repeat(101)}`, { key: FULL });
    expect(long.status).toBe(400);
    expect(long.body.errors).toEqual([{ in: 'query', path: ['q'], message: 'q must be text of at most 100 characters' }]);
    const state = await api.call<Problem>('GET', '/v1/tenants?state=sleeping', { key: FULL });
    expect(state.status).toBe(400);
    expect(state.body.errors?.[0]).toMatchObject({ in: 'query', path: ['state'], message: expect.stringContaining('state must be one of connected, needs_reconnect') as unknown });
  });

  it("shows the schedule, defaults applied, and nextRunAt: the earliest next of the tenant's schedulers", async () => {
    const before = (await api.call<View>('GET', '/v1/tenants/acme', { key: FULL })).body;
    expect(before.nextRunAt).toBeNull();
    expect(before.schedule).toEqual({ everyMs: 900_000, cron: null, tz: null, reconcileEveryMs: 86_400_000 });
    await ensureTickSchedules(rig.app.queues.schedule, rig.app.tenants());
    const queue = rig.app.queues.schedule;
    const expected = async (id: string): Promise<string> => {
      const nexts = await Promise.all(['incremental', 'reconcile'].map(async (mode) => (await queue.getJobScheduler(jobId('tick', id, mode)))?.next));
      const known = nexts.filter((n): n is number => typeof n === 'number');
      expect(known).toHaveLength(2);
      return new Date(Math.min(...known)).toISOString();
    };
    const list = (await api.call<List>('GET', '/v1/tenants?limit=100', { key: FULL })).body.items;
    expect(list).toHaveLength(9 + SHEEP.length);
    for (const t of list) expect(t.nextRunAt, t.id).toBe(await expected(t.id));
    const delta = (await api.call<View>('GET', '/v1/tenants/delta', { key: FULL })).body;
    expect(delta.schedule).toEqual({ everyMs: null, cron: '0 6 * * *', tz: 'Asia/Riyadh', reconcileEveryMs: 86_400_000 });
    expect(delta.nextRunAt).toBe(await expected('delta'));
    const foxtrot = (await api.call<View>('GET', '/v1/tenants/foxtrot', { key: FULL })).body;
    expect(foxtrot.schedule).toEqual({ everyMs: 300_000, cron: null, tz: null, reconcileEveryMs: 43_200_000 });
    expect(foxtrot.nextRunAt).toBe(await expected('foxtrot'));
  });

  it("revokes a tenant's connection: told the platform, chain and binding deleted, links revoked, connection.changed told", async () => {
    const link = await api.call('POST', '/v1/tenants/lime/connect-links', { key: FULL, body: {} });
    // Connect links are off without PUBLIC_URL: lime has none outstanding, and its revoke has nothing to do.
    expect(link.status).toBe(501);
    const none = await api.call<Record<string, unknown>>('DELETE', '/v1/tenants/lime/connection', { key: FULL });
    expect([none.status, none.body]).toEqual([200, { tenantId: 'lime', connection: null, platform: 'not connected', chainDeleted: false, linksRevoked: 0 }]);

    const revoked = await api.call<Record<string, unknown>>('DELETE', '/v1/tenants/kiwi/connection', { key: LIMITED });
    expect([revoked.status, revoked.body]).toEqual([200, { tenantId: 'kiwi', connection: KIWI_ORG, platform: 'revoked', chainDeleted: true, linksRevoked: 0 }]);
    expect(deleted).toEqual(['/connections/conn-kiwi']);
    expect(await new PlatformTokenStore(rig.app.redis, rig.env.KEY_PREFIX, 'xero', KIWI_ORG).read()).toBeUndefined();
    expect(await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).get('kiwi')).toBeUndefined();
    expect((await api.call<View>('GET', '/v1/tenants/kiwi', { key: FULL })).body.connection?.state).toBe('awaiting_connection');
    const events = await api.call<{ items: { type: string; tenantId: string; data: { state: string; reason?: string } }[] }>('GET', '/v1/events?type=connection.changed', { key: FULL });
    expect(events.body.items.map((e) => [e.tenantId, e.data.state])).toEqual([['kiwi', 'revoked']]);
    expect(events.body.items[0]?.data.reason).toContain('by api:acme-kiwi');
    const line = rig.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['msg'] === 'api: connection revoked' && l['tenant'] === 'kiwi');
    expect(line).toMatchObject({ tenant: 'kiwi', key: 'acme-kiwi', chainDeleted: true });
  });

  it('answers a revoke of a tenant not connected with a link, unknown or not visible, with problems', async () => {
    const file = await api.call<Problem>('DELETE', '/v1/tenants/acme/connection', { key: FULL });
    expect([file.status, file.body.type]).toEqual([409, 'tag:collections-sync,2026:problem/not-connectable']);
    const unknown = await api.call<Problem>('DELETE', '/v1/tenants/nobody/connection', { key: FULL });
    expect(unknown.status).toBe(404);
    const hidden = await api.call<Problem>('DELETE', '/v1/tenants/mango/connection', { key: LIMITED });
    expect([hidden.status, hidden.body.detail]).toEqual([404, unknown.body.detail]);
    expect(await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).get('mango')).toBeDefined();
  });
});

describe('the tenant list filtered over 10,000 tenants', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let server: WebhookServer;
  let api: ApiClient;
  let deps: ApiDeps;
  const KEY = 'bench-key-Gq4Wx9Tn2Rb7Kd5VmLz8Hc3Jp';
  const N = 10_000;

  beforeAll(async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], worker: false });
    const entries = (JSON.parse(tenantsJson(Array.from({ length: N }, (_, i) => ({ id: `t${String(i).padStart(5, '0')}`, platform: { kind: 'file', path: '/tmp/nowhere' } })))) as { tenants: unknown[] }).tenants;
    const tenants: TenantConfig[] = entries.map((e) => tenantSchema.parse(e));
    const byId = new Map(tenants.map((t) => [t.id, t]));
    deps = {
      keys: parseApiKeys(`bench:${KEY}`).keys,
      ratePerMin: 10_000,
      redis: rig.app.redis,
      prefix: rig.env.KEY_PREFIX,
      stores: rig.app.stores,
      syncQueue: rig.app.queues.sync,
      tenant: (id) => byId.get(id),
      tenants: () => tenants,
      logger: rig.app.logger,
    };
    server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      signatureHeader: 'x-webhook-signature',
      ratePerMin: 100,
      logger: rig.app.logger,
      secretOf: () => undefined,
      accept: async () => ({ eventId: 'e1', duplicate: false }),
      routes: (hono, unauthorized) => mountApi(hono, deps, unauthorized),
    });
    api = new ApiClient(openApiDocument(), `http://127.0.0.1:${server.port}`);
    // The last tenant's last run failed: a filter finds it after reading every other.
    await rig.app.stores.runs.start('t09999', { runId: 'run-1', mode: 'incremental', startedAt: Date.now(), trigger: 'schedule' });
    await rig.app.stores.runs.finish('t09999', 'run-1', { outcome: 'failed', finishedAt: Date.now(), counts: {}, errors: [] });
  }, 60_000);
  afterAll(async () => {
    await server?.close();
    await rig?.close();
  });

  // How long these take is measured by the bench (section `console`), never asserted here.
  it('answers a filter that matches nothing (or the last tenant only) after reading every tenant: one page, next null', async () => {
    for (const query of ['state=failing', 'state=partial', 'state=waiting', 'state=running', 'state=connected', 'q=zzz']) {
      const got = await api.call<List>('GET', `/v1/tenants?${query}`, { key: KEY });
      expect(got.status).toBe(200);
      expect(got.body.items.map((t) => t.id), query).toEqual(query === 'state=failing' ? ['t09999'] : []);
      expect(got.body.next, query).toBeNull();
    }
  }, 120_000);

  it('answers a revoke 501 revoke-needs-token-key where the server cannot revoke (no PLATFORM_TOKEN_KEY)', async () => {
    const xero = tenantSchema.parse({ id: 'kiwi', collections: { clientId: 'c-kiwi', clientSecret: 's-kiwi-x9' }, platform: { kind: 'xero', clientId: 'X', clientSecret: 'x' } });
    const answer = async (extra: Partial<ApiDeps>) => {
      const app = apiApp({ ...deps, tenants: () => [xero], tenant: (id) => (id === 'kiwi' ? xero : undefined), ...extra }, () => new Response(null, { status: 401 }));
      const res = await app.request('/v1/tenants/kiwi/connection', { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
      return { status: res.status, type: res.headers.get('content-type'), body: (await res.json()) as Problem };
    };
    for (const extra of [{}, { revokeConnection: async () => undefined }]) {
      const got = await answer(extra);
      expect([got.status, got.type, got.body.type]).toEqual([501, 'application/problem+json', 'tag:collections-sync,2026:problem/revoke-needs-token-key']);
    }
  });
});
