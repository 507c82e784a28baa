/**
 * The protocol end to end in one process, against the simulator over HTTP: compare-and-refresh (a burst of 401s
 * gives one rotation), wrong credentials (clear error, bounded token calls, recovery after the fix), and two
 * tenants with different clients (tokens never cross).
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { authClientKey, authKeys, type ClientCredentials } from '../../src/auth/index.js';
import { CollectionsClient } from '../../src/collections/client.js';
import { TransientError } from '../../src/collections/errors.js';
import { requestToken, TOKEN_ROUTE } from '../../src/collections/token.js';
import { Secret } from '../../src/secret.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';
import { buildRig, eventually } from './harness.js';

const redis = useTestRedis();

interface TenantSpec {
  id: string;
  clientId: string;
  secret: string;
}

/** The tenants file in memory: tests change a secret here to "fix the tenants file". */
class TenantsInMemory {
  readonly #t = new Map<string, TenantSpec>();
  constructor(
    specs: TenantSpec[],
    readonly authUrl: string,
  ) {
    for (const s of specs) this.#t.set(s.id, s);
  }
  set(spec: TenantSpec): void {
    this.#t.set(spec.id, spec);
  }
  tenant(id: string) {
    const s = this.#t.get(id)!;
    return { id: s.id, collections: { clientId: s.clientId, clientSecret: new Secret(s.secret) } };
  }
  readonly credentials = (id: string): ClientCredentials | undefined => {
    const s = this.#t.get(id);
    return s && { clientId: s.clientId, clientSecret: new Secret(s.secret), authUrl: this.authUrl };
  };
}

async function setup(specs: TenantSpec[], simClients: Array<{ clientId: string; clientSecret: string }>, settings: Parameters<typeof buildRig>[0]['settings'] = {}) {
  const sim = await startSimulator({ clients: simClients, tokenLifetimeMs: 60_000 });
  onTestFinished(() => sim.close());
  const tenants = new TenantsInMemory(specs, sim.authUrl);
  const prefix = testPrefix('auth');
  onTestFinished(() => dropPrefix(redis.url, prefix));
  const rig = await buildRig({
    url: redis.url,
    prefix,
    authUrl: sim.authUrl,
    settings: { requestTimeoutMs: 5_000, tokenCallTimeoutMs: 2_000, pollMs: 100, ...settings },
    credentials: tenants.credentials,
  });
  onTestFinished(() => rig.close());
  const clientFor = (tenantId: string, o: { retries?: number; requestMs?: number } = {}): CollectionsClient => {
    const c = new CollectionsClient({
      baseUrl: sim.baseUrl,
      tokens: rig.auth.providerFor(tenants.tenant(tenantId)),
      retries: o.retries ?? 2,
      backoff: { baseMs: 20, maxMs: 100 },
      ...(o.requestMs !== undefined ? { timeouts: { requestMs: o.requestMs } } : {}),
    });
    onTestFinished(() => c.close());
    return c;
  };
  return { sim, tenants, rig, prefix, clientFor };
}

const tokenCalls = (s: Simulator, status: string): number => s.counters().requests[TOKEN_ROUTE]?.[status] ?? 0;

describe('compare-and-refresh', () => {
  it('turns a burst of 50 concurrent rejections of one version into exactly one rotation', async () => {
    const { sim: s, tenants, rig } = await setup([{ id: 't1', clientId: 'c1', secret: 's1' }], [{ clientId: 'c1', clientSecret: 's1' }]);
    const provider = rig.auth.providerFor(tenants.tenant('t1'));
    const first = await provider.acquire(); // no token yet: one on-demand rotation
    await first.release();
    expect(first.version).toBe(1);
    expect(s.counters().tokensIssued['c1']).toBe(1);

    await Promise.all(Array.from({ length: 50 }, () => provider.rejected(first, 'superseded')));
    expect(s.counters().tokensIssued['c1']).toBe(2);
    expect((await rig.auth.status(authClientKey(s.authUrl, 'c1'))).version).toBe(2);

    // The same stale version again: the stored one moved on, so nothing is rotated.
    await Promise.all(Array.from({ length: 50 }, () => provider.rejected(first, 'superseded')));
    expect(s.counters().tokensIssued['c1']).toBe(2);
    const second = await provider.acquire();
    expect(second.version).toBe(2);
    expect(second.token).not.toBe(first.token);
    await second.release();
  });

  it('heals a token superseded behind its back with one rotation, however many requests got the 401', async () => {
    const { sim: s, rig, clientFor } = await setup([{ id: 't1', clientId: 'c1', secret: 's1' }], [{ clientId: 'c1', clientSecret: 's1' }]);
    const client = clientFor('t1');
    await client.listContacts({ size: 1 });
    expect(s.counters().tokensIssued['c1']).toBe(1);
    // Someone outside the protocol gets a token: the stored one is dead.
    await requestToken({ authUrl: s.authUrl, clientId: 'c1', clientSecret: new Secret('s1') });
    s.setFaults({ latencyMs: 20 });
    const results = await Promise.allSettled(Array.from({ length: 40 }, () => client.listContacts({ size: 1 })));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    const c = s.counters();
    expect(c.unauthorized.superseded).toBeGreaterThan(0);
    expect(c.tokensIssued['c1']).toBe(3); // ours, the outsider's, and exactly one rotation
    expect((await rig.auth.status(authClientKey(s.authUrl, 'c1'))).version).toBe(2);
  });
});

describe('token endpoint down', () => {
  it('opens the gate again and lets BullMQ retry the rotation with backoff; waiting requests then go through', async () => {
    const { sim: s, rig, clientFor } = await setup([{ id: 't1', clientId: 'c1', secret: 's1' }], [{ clientId: 'c1', clientSecret: 's1' }]);
    s.setFaults({ script: [{ route: TOKEN_ROUTE, fault: '503', count: 2 }] });
    const client = clientFor('t1');
    const pages = await Promise.all(Array.from({ length: 10 }, () => client.listContacts({ size: 1 })));
    expect(pages.length).toBe(10);
    expect(tokenCalls(s, '503')).toBe(2);
    expect(s.counters().tokensIssued['c1']).toBe(1);
    const c1 = authClientKey(s.authUrl, 'c1');
    // The process's lease pool gives its leases back once unused.
    const status = await eventually(async () => {
      const st = await rig.auth.status(c1);
      return st.leases === 0 ? st : undefined;
    }, 3_000, 'the pooled leases back');
    expect(status).toMatchObject({ version: 1, gateClosed: false, leases: 0 });
    expect(status.failure).toBeUndefined();
  });
  it('a request whose time budget runs out while it waits for a token fails transient (retryable), not "aborted by the caller"', async () => {
    const { sim: s, clientFor } = await setup([{ id: 't1', clientId: 'c1', secret: 's1' }], [{ clientId: 'c1', clientSecret: 's1' }]);
    s.setFaults({ script: [{ route: TOKEN_ROUTE, fault: '503', count: 1_000 }] });
    const client = clientFor('t1', { retries: 0, requestMs: 800 });
    const err = await client.listContacts({ size: 1 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // Before: the provider's wait, aborted by the request's own budget, escaped as ABORTED (retryable: false), and a
    // sync run took it for a failure of every record rather than a service that is down for now.
    expect(err).toBeInstanceOf(TransientError);
    expect((err as TransientError).retryable).toBe(true);
    expect((err as Error).message).toMatch(/no token lease within the time budget/);
    expect(tokenCalls(s, '503')).toBeGreaterThan(0);
    s.setFaults({ script: [] });
  });
});

describe('wrong credentials', () => {
  it('give a clear auth error, a bounded number of token calls, status, and recovery once the secret is fixed', async () => {
    const { sim: s, tenants, rig, clientFor } = await setup(
      [{ id: 't1', clientId: 'c1', secret: 'not-the-secret' }],
      [{ clientId: 'c1', clientSecret: 'right-1' }],
      { cooldownBaseMs: 1_000, cooldownMaxMs: 4_000 },
    );
    const client = clientFor('t1');
    const errors: unknown[] = [];
    let requests = 0;
    const until = Date.now() + 4_000;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (Date.now() < until) {
          requests += 1;
          await client.listContacts({ size: 1 }).catch((e: unknown) => errors.push(e));
        }
      }),
    );
    expect(errors.length).toBe(requests);
    const codes = new Set(errors.map((e) => (e as { code?: string }).code));
    expect(codes).toEqual(new Set(['AUTH_CREDENTIALS_REJECTED']));
    const message = (errors[0] as Error).message;
    expect(message).toContain('tenant "t1" (client "c1")');
    expect(message).toContain('fix collections.clientSecret in the tenants file');
    expect(message).not.toContain('not-the-secret');

    // Hundreds of failed requests, a handful of token calls: 1 s, 2 s, 4 s cooldowns over 4 s allow at most 3.
    const refused = tokenCalls(s, '401');
    expect(requests).toBeGreaterThan(50);
    expect(refused).toBeGreaterThanOrEqual(1);
    expect(refused).toBeLessThanOrEqual(3);
    expect(s.counters().unauthorized).toEqual({ missing: 0, expired: 0, superseded: 0, invalid: 0 });
    const status = await rig.auth.status(authClientKey(s.authUrl, 'c1'));
    expect(status.hasToken).toBe(false);
    expect(status.failure?.failures).toBe(refused);
    expect(status.failure?.reason).toContain('refused');

    // The fix: a new key in the service and in the tenants file.
    s.setClient('c1', 'right-2');
    tenants.set({ id: 't1', clientId: 'c1', secret: 'right-2' });
    const fixed = clientFor('t1');
    const page = await fixed.listContacts({ size: 1 });
    expect(page.items).toEqual([]);
    const after = await rig.auth.status(authClientKey(s.authUrl, 'c1'));
    expect(after.failure).toBeUndefined();
    expect(after.hasToken).toBe(true);
    expect(tokenCalls(s, '200')).toBe(1);
  });
});

describe('two tenants', () => {
  it('with different clients never share a token; tenants of one client share its one token', async () => {
    const { sim: s, rig, prefix, clientFor } = await setup(
      [
        { id: 'ta', clientId: 'ca', secret: 'sa' },
        { id: 'ta2', clientId: 'ca', secret: 'sa' },
        { id: 'tb', clientId: 'cb', secret: 'sb' },
      ],
      [
        { clientId: 'ca', clientSecret: 'sa' },
        { clientId: 'cb', clientSecret: 'sb' },
      ],
    );
    s.setFaults({ latencyMs: 5, jitterMs: 5 });
    const a = clientFor('ta');
    const a2 = clientFor('ta2');
    const b = clientFor('tb');
    await Promise.all([
      ...Array.from({ length: 20 }, (_, i) => a.createContact({ name: `A-${i}`, extPlatformId: `a-${i}` })),
      ...Array.from({ length: 10 }, (_, i) => a2.createContact({ name: `A2-${i}`, extPlatformId: `a2-${i}` })),
      ...Array.from({ length: 20 }, (_, i) => b.createContact({ name: `B-${i}`, extPlatformId: `b-${i}` })),
    ]);
    const [pa, pb] = await Promise.all([a.listContacts({ size: 100 }), b.listContacts({ size: 100 })]);
    expect(pa.items.map((c) => c.name).sort()).toEqual(s.data('ca').contacts.map((c) => c.name).sort());
    expect(pa.items.every((c) => c.name?.startsWith('A'))).toBe(true);
    expect(pa.items.length).toBe(30);
    expect(pb.items.every((c) => c.name?.startsWith('B-'))).toBe(true);
    expect(pb.items.length).toBe(20);

    const c = s.counters();
    expect(c.unauthorized).toEqual({ missing: 0, expired: 0, superseded: 0, invalid: 0 });
    expect(c.tokensIssued).toEqual({ ca: 1, cb: 1 });
    const ta = await rig.redis.hget(authKeys(prefix, authClientKey(s.authUrl, 'ca')).token, 'token');
    const tb = await rig.redis.hget(authKeys(prefix, authClientKey(s.authUrl, 'cb')).token, 'token');
    expect(ta).not.toBe(tb);
    const sub = (t: string | null) => (JSON.parse(Buffer.from(t!.split('.')[1]!, 'base64url').toString('utf8')) as { sub: string }).sub;
    expect([sub(ta), sub(tb)]).toEqual(['ca', 'cb']);

    // Rotating one client leaves the other's token alone.
    await rig.auth.refresher.rotate(authClientKey(s.authUrl, 'ca'), { clientId: 'ca', clientSecret: new Secret('sa'), authUrl: s.authUrl }, { reason: 'manual' });
    expect(await rig.redis.hget(authKeys(prefix, authClientKey(s.authUrl, 'cb')).token, 'token')).toBe(tb);
    await eventually(async () => ((await b.listContacts({ size: 1 })).items.length === 1 ? true : undefined), 5_000, 'cb still served');
    expect(s.counters().unauthorized.superseded).toBe(0);
  });
});

describe('one client id at two services (issue 17)', () => {
  it('gives each its own token: both tenants sync with no 401 and no token crosses over', async () => {
    // Two services, each with a client "c1" (and its own secret): the tenant of service B names its auth URL.
    const simA = await startSimulator({ clients: [{ clientId: 'c1', clientSecret: 'secret-a' }], tokenLifetimeMs: 60_000 });
    const simB = await startSimulator({ clients: [{ clientId: 'c1', clientSecret: 'secret-b' }], tokenLifetimeMs: 60_000 });
    onTestFinished(() => simA.close());
    onTestFinished(() => simB.close());
    const prefix = testPrefix('auth');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const tenantA = { id: 'ta', collections: { clientId: 'c1', clientSecret: new Secret('secret-a') } };
    const tenantB = { id: 'tb', collections: { clientId: 'c1', clientSecret: new Secret('secret-b'), authUrl: simB.authUrl } };
    const rig = await buildRig({
      url: redis.url,
      prefix,
      authUrl: simA.authUrl,
      settings: { requestTimeoutMs: 5_000, tokenCallTimeoutMs: 2_000, pollMs: 100 },
      credentials: (id) =>
        id === 'ta'
          ? { clientId: 'c1', clientSecret: tenantA.collections.clientSecret, authUrl: simA.authUrl }
          : id === 'tb'
            ? { clientId: 'c1', clientSecret: tenantB.collections.clientSecret, authUrl: simB.authUrl }
            : undefined,
    });
    onTestFinished(() => rig.close());
    expect(rig.auth.clientKeyOf(tenantA)).not.toBe(rig.auth.clientKeyOf(tenantB));
    const a = new CollectionsClient({ baseUrl: simA.baseUrl, tokens: rig.auth.providerFor(tenantA), retries: 2, backoff: { baseMs: 20, maxMs: 100 } });
    const b = new CollectionsClient({ baseUrl: simB.baseUrl, tokens: rig.auth.providerFor(tenantB), retries: 2, backoff: { baseMs: 20, maxMs: 100 } });
    onTestFinished(() => a.close());
    onTestFinished(() => b.close());

    await Promise.all([
      ...Array.from({ length: 15 }, (_, i) => a.createContact({ name: `A-${i}`, extPlatformId: `a-${i}` })),
      ...Array.from({ length: 15 }, (_, i) => b.createContact({ name: `B-${i}`, extPlatformId: `b-${i}` })),
    ]);
    const [pa, pb] = await Promise.all([a.listContacts({ size: 100 }), b.listContacts({ size: 100 })]);
    expect(pa.items.map((c) => c.name).sort()).toEqual(Array.from({ length: 15 }, (_, i) => `A-${i}`).sort());
    expect(pb.items.map((c) => c.name).sort()).toEqual(Array.from({ length: 15 }, (_, i) => `B-${i}`).sort());
    for (const s of [simA, simB]) {
      expect(s.counters().unauthorized).toEqual({ missing: 0, expired: 0, superseded: 0, invalid: 0 });
      expect(s.counters().tokensIssued).toEqual({ c1: 1 });
    }
    const stored = await Promise.all([tenantA, tenantB].map((t) => rig.redis.hget(authKeys(prefix, rig.auth.clientKeyOf(t)).token, 'token')));
    expect(stored[0]).not.toBe(stored[1]);
  });
});
