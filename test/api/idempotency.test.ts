/**
 * What the control API keeps for Idempotency-Keys (issue 36, findings 6 and 7), on a public server of its own with
 * the API mounted as src/webhooks mounts it, on a rig without a worker: the answers kept per API key name are
 * capped (API_IDEMPOTENCY_MAX_PER_KEY; past it the oldest go first, across tenants, other key names untouched); an
 * answer holding a secret is kept sealed with the token cipher, not kept without one, and run again when it no longer
 * opens (test/api/api.test.ts holds a connect link's answer through the whole server).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mountApi, openApiDocument, type ApiDeps } from '../../src/api/index.js';
import { IdempotencyStore } from '../../src/api/idempotency.js';
import { parseApiKeys } from '../../src/config/api-keys.js';
import { loadEnv } from '../../src/config/env.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import { startWebhookServer, type WebhookServer } from '../../src/webhooks/server.js';
import { ApiClient } from '../helpers/openapi.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const KEY = 'capped-key-Tq7Wn2Rb9Kd4VmLz6Hc3Jp8Fs5G';
const OTHER = 'other-key-Xb3Wq8Rn5Kd2VzLc9Hs6Jp4Fm7T';

describe('Idempotency-Key answers kept by the control API', () => {
  const redis = useTestRedis();
  let rig: Rig;
  const servers: WebhookServer[] = [];
  const doc = openApiDocument();

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'acme', platform: { kind: 'memory', name: 'acme' } },
        { id: 'beta', platform: { kind: 'memory', name: 'beta' } },
      ],
      worker: false,
    });
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    await rig?.close();
  });

  const serve = async (extra: Partial<ApiDeps>): Promise<ApiClient> => {
    const deps: ApiDeps = {
      keys: parseApiKeys(`one:${KEY},two:${OTHER}`).keys,
      ratePerMin: 10_000,
      redis: rig.app.redis,
      prefix: rig.env.KEY_PREFIX,
      stores: rig.app.stores,
      syncQueue: rig.app.queues.sync,
      tenant: (id) => rig.app.tenant(id),
      tenants: () => rig.app.tenants(),
      logger: rig.app.logger,
      ...extra,
    };
    const server = await startWebhookServer({
      port: 0,
      host: '127.0.0.1',
      signatureHeader: 'x-webhook-signature',
      ratePerMin: 100,
      logger: rig.app.logger,
      secretOf: () => undefined,
      accept: async () => ({ eventId: 'e1', duplicate: false }),
      routes: (hono, unauthorized) => mountApi(hono, deps, unauthorized),
    });
    servers.push(server);
    return new ApiClient(doc, `http://127.0.0.1:${server.port}`);
  };

  it('API_IDEMPOTENCY_MAX_PER_KEY: 10,000 by default, a whole number from 1', () => {
    expect(loadEnv({}).API_IDEMPOTENCY_MAX_PER_KEY).toBe(10_000);
    expect(loadEnv({ API_IDEMPOTENCY_MAX_PER_KEY: '3' }).API_IDEMPOTENCY_MAX_PER_KEY).toBe(3);
    expect(() => loadEnv({ API_IDEMPOTENCY_MAX_PER_KEY: '0' })).toThrow(/API_IDEMPOTENCY_MAX_PER_KEY/);
  });

  it('keeps at most the cap of answers per key name, across its tenants: past it the oldest go first, and a retry of one gone runs again', async () => {
    const api = await serve({ idempotencyMaxPerKey: 3 });
    const store = new IdempotencyStore(rig.app.redis, rig.env.KEY_PREFIX);
    const post = (key: string, tenant: string, idem: string) => api.call('POST', `/v1/tenants/${tenant}/runs`, { key, body: { mode: 'incremental' }, headers: { 'idempotency-key': idem } });
    const sent: [string, string][] = [['acme', 'k1'], ['beta', 'k2'], ['acme', 'k3'], ['beta', 'k4'], ['acme', 'k5']];
    for (const [tenant, idem] of sent) expect((await post(KEY, tenant, idem)).status).toBe(202);
    // Another key name's answers are its own, and count against its own cap only.
    expect((await post(OTHER, 'acme', 'k1')).status).toBe(202);
    const kept = async (name: string, pairs: [string, string][]) =>
      Promise.all(pairs.map(async ([tenant, idem]) => (await rig.app.redis.exists(store.key(tenant, name, idem))) === 1));
    expect(await kept('one', sent)).toEqual([false, false, true, true, true]);
    expect(await kept('two', [['acme', 'k1']])).toEqual([true]);
    // The newest replay; the oldest, gone, runs again (the queued run is joined: nothing is made twice).
    const replayed = await post(KEY, 'acme', 'k5');
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    const again = await post(KEY, 'acme', 'k1');
    expect(again.status).toBe(202);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    // k1 is kept again, and k3, now the oldest, went for it.
    expect(await kept('one', sent)).toEqual([true, false, false, true, true]);
    await rig.app.queues.sync.obliterate({ force: true });
  });

  it('keeps a secret answer sealed (bound to its key), never without a sealer, and runs again one sealed under another key', async () => {
    const secretAnswer = { status: 201, body: '{"url":"https://hooks.example.com/connect/v1.secret-capability"}', location: '/somewhere' };
    const sealer = TokenCipher.fromText('b'.repeat(64));
    const sealed = new IdempotencyStore(rig.app.redis, rig.env.KEY_PREFIX, { sealer });
    const first = await sealed.claim('acme', 'one', 'secret-1', 'POST link');
    if (first.kind !== 'run') throw new Error(first.kind);
    await first.finish(secretAnswer, { secret: true });
    const raw = (await rig.app.redis.get(sealed.key('acme', 'one', 'secret-1'))) ?? '';
    expect(raw).not.toContain('connect');
    expect(raw).not.toContain('/somewhere');
    expect(await sealed.claim('acme', 'one', 'secret-1', 'POST link')).toEqual({ kind: 'replay', answer: secretAnswer });
    // Moved to another key (another tenant's), it does not open: the bytes are bound to where they were kept.
    await rig.app.redis.set(sealed.key('beta', 'one', 'secret-1'), raw);
    expect((await sealed.claim('beta', 'one', 'secret-1', 'POST link')).kind).toBe('run');
    // Another PLATFORM_TOKEN_KEY: dropped, and the request runs again.
    const rekeyed = new IdempotencyStore(rig.app.redis, rig.env.KEY_PREFIX, { sealer: TokenCipher.fromText('c'.repeat(64)) });
    expect((await rekeyed.claim('acme', 'one', 'secret-1', 'POST link')).kind).toBe('run');
    // Without a sealer a secret answer is not kept (a retry makes a new link), and its marker is gone.
    const plain = new IdempotencyStore(rig.app.redis, rig.env.KEY_PREFIX);
    const unsealed = await plain.claim('acme', 'one', 'secret-2', 'POST link');
    if (unsealed.kind !== 'run') throw new Error(unsealed.kind);
    await unsealed.finish(secretAnswer, { secret: true });
    expect(await rig.app.redis.exists(plain.key('acme', 'one', 'secret-2'))).toBe(0);
  });
});
