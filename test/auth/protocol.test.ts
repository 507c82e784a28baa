/**
 * The Lua scripts and the provider against real Redis, without the service: leases and the in-flight limit,
 * gate expiry, the missing-token path, the failure cooldown seen by acquire, and the fenced store.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Secret } from '../../src/secret.js';
import { createHash, createHmac } from 'node:crypto';
import { authClientKey, CredentialsRejectedError, secretFingerprint } from '../../src/auth/index.js';
import { CollectionsError } from '../../src/collections/errors.js';
import type { TokenProvider } from '../../src/collections/token-provider.js';
import { ClientAuthStore } from '../../src/auth/token-store.js';
import { Queue } from 'bullmq';
import { createAuth } from '../../src/auth/index.js';
import { QUEUES, refreshJobs } from '../../src/queues/index.js';
import { refreshPlanId } from '../../src/queues/jobs.js';
import { connectRedis, createRedis } from '../../src/redis/connection.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';
import { resolveAuthSettings, tokenPlan } from '../../src/auth/settings.js';
import { buildRig, eventually, NO_AUTH_URL, quietLogger, sleep, TEST_FINGERPRINT_KEY, type AuthRig } from './harness.js';

/** The client key of client c1 at the (never called) token endpoint of these tests. */
const C1 = authClientKey(NO_AUTH_URL, 'c1');

const redis = useTestRedis();
const tenant = (id: string, clientId: string, secret: string, inFlightLimit?: number) => ({
  id,
  collections: { clientId, clientSecret: new Secret(secret) },
  ...(inFlightLimit === undefined ? {} : { inFlightLimit }),
});

async function rig(settings: Parameters<typeof buildRig>[0]['settings'] = {}): Promise<{ rig: AuthRig; prefix: string }> {
  const prefix = testPrefix('auth');
  onTestFinished(() => dropPrefix(redis.url, prefix));
  const r = await buildRig({ url: redis.url, prefix, settings: { pollMs: 50, ...settings } });
  onTestFinished(() => r.close());
  return { rig: r, prefix };
}

/** Stores a token the way the refresher does (lock held, fenced compare-and-set). */
async function seed(client: Redis, prefix: string, clientKey: string, token: string, expiresAt: number, expected = 0): Promise<number> {
  const store = new ClientAuthStore(client, prefix, clientKey);
  await client.set(store.keys.lock, 'seeder', 'PX', 5_000);
  const r = await store.store('seeder', expected, token, expiresAt);
  await client.del(store.keys.lock);
  if (!r.ok) throw new Error(`seed failed: ${r.why}`);
  return r.version;
}

const settle = async <T>(p: Promise<T>): Promise<'pending' | 'settled'> =>
  Promise.race([p.then(() => 'settled' as const, () => 'settled' as const), sleep(300).then(() => 'pending' as const)]);

describe('leases', () => {
  it('without a lease pool (leaseHoldMs 0), take one round trip each way, carry the stored token and version, and count against the in-flight limit', async () => {
    const { rig: r, prefix } = await rig({ requestTimeoutMs: 10_000, leaseHoldMs: 0 });
    await seed(r.redis, prefix, C1, 'tok-1', Date.now() + 60_000);
    const provider: TokenProvider = r.auth.providerFor(tenant('t1', 'c1', 's', 3));

    // Warm up (loads the scripts), then count every command this connection sends.
    await (await provider.acquire()).release();
    const calls: string[] = [];
    const send = r.redis.sendCommand.bind(r.redis);
    r.redis.sendCommand = ((cmd: Parameters<Redis['sendCommand']>[0], stream?: Parameters<Redis['sendCommand']>[1]) => {
      calls.push(cmd.name);
      return send(cmd, stream);
    });

    const leases = await Promise.all([provider.acquire(), provider.acquire(), provider.acquire()]);
    expect(leases.map((l) => [l.token, l.version])).toEqual([['tok-1', 1], ['tok-1', 1], ['tok-1', 1]]);
    expect(calls).toEqual(['evalsha', 'evalsha', 'evalsha']);
    expect((await r.auth.status(C1)).leases).toBe(3);

    const fourth = provider.acquire();
    expect(await settle(fourth)).toBe('pending');
    await leases[0].release();
    const got = await fourth;
    expect(got.token).toBe('tok-1');
    expect((await r.auth.status(C1)).leases).toBe(3);
    calls.length = 0;
    await got.release();
    expect(calls).toEqual(['evalsha']);
    await got.release(); // idempotent: no second round trip
    expect(calls).toEqual(['evalsha']);
    await Promise.all([leases[1], leases[2]].map((l) => l.release()));
    expect((await r.auth.status(C1)).leases).toBe(0);
  });

  it('expire on their own, so a request that never released does not hold the limit', async () => {
    const { rig: r, prefix } = await rig({ requestTimeoutMs: 200, leaseHoldMs: 0 });
    await seed(r.redis, prefix, C1, 'tok-1', Date.now() + 60_000);
    const provider = r.auth.providerFor(tenant('t1', 'c1', 's', 1));
    await provider.acquire(); // never released (a crashed process)
    const second = provider.acquire();
    expect((await second).token).toBe('tok-1');
    const store = new ClientAuthStore(r.redis, prefix, C1);
    await sleep(250);
    expect(await store.leaseCount()).toBe(0);
  });
});

describe('the token held decides (issue 12)', () => {
  it('plans from the token\'s own lifetime: margin a fraction of it (at least 500 ms, at most half), lease floor the request timeout (at most half the margin)', () => {
    const s = resolveAuthSettings({ requestTimeoutMs: 20_000, marginFraction: 0.2 });
    expect(tokenPlan(s, 300_000)).toEqual({ marginMs: 60_000, leaseFloorMs: 20_000 });
    expect(tokenPlan(s, 4_000)).toEqual({ marginMs: 800, leaseFloorMs: 400 });
    expect(tokenPlan(s, 2_000)).toEqual({ marginMs: 500, leaseFloorMs: 250 });
    expect(tokenPlan(s, 600)).toEqual({ marginMs: 300, leaseFloorMs: 150 });
  });

  it('never leases a token within its lease floor (as good as missing: a rotation is asked for), and no lease outlives its token', async () => {
    const { rig: r, prefix } = await rig({ requestTimeoutMs: 10_000 });
    const store = new ClientAuthStore(r.redis, prefix, C1);
    await r.redis.set(store.keys.lock, 'seeder', 'PX', 5_000);
    // 3 s of life left, a lease floor of 2 s: leased, but the lease ends with the token, not 10 s later.
    const expiresAt = Date.now() + 3_000;
    expect(await store.store('seeder', 0, 'tok-1', expiresAt, { marginMs: 2_500, leaseFloorMs: 2_000 })).toMatchObject({ ok: true, version: 1 });
    expect(await store.acquire('l1', 10_000, 10, 'fp')).toEqual({ kind: 'ok', token: 'tok-1', version: 1 });
    expect(Number(await r.redis.zscore(store.keys.leases, 'l1'))).toBe(expiresAt);
    // 1.5 s left, under the floor: not leased.
    expect(await store.store('seeder', 1, 'tok-2', Date.now() + 1_500, { marginMs: 2_500, leaseFloorMs: 2_000 })).toMatchObject({ ok: true, version: 2 });
    expect(await store.acquire('l2', 10_000, 10, 'fp')).toEqual({ kind: 'missing' });
    const provider = r.auth.providerFor(tenant('t1', 'c1', 's'));
    const waiting = provider.acquire(AbortSignal.timeout(600)).catch((err: unknown) => err);
    const asked = await eventually(async () => (await r.queue.getJobs(['waiting']))[0], 2_000, 'a rotation asked for');
    expect(asked.data).toEqual({ clientKey: C1, tenantId: 't1', reason: 'missing' });
    expect(await waiting).toBeInstanceOf(Error);
  });

  it('a rotation plans the next check of its token at the token\'s margin, on a job of its own version', async () => {
    const exp = Math.floor(Date.now() / 1000) + 60;
    const prefix = testPrefix('auth');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const r = await buildRig({ url: redis.url, prefix, settings: { requestTimeoutMs: 10_000 }, requestToken: async () => ({ accessToken: 'tok-new', expiresAtMs: exp * 1000 }) });
    onTestFinished(() => r.close());
    const out = await r.auth.refresher.rotate(C1, { clientId: 'c1', clientSecret: new Secret('s'), authUrl: NO_AUTH_URL }, { reason: 'manual', tenantId: 't1' });
    expect(out).toMatchObject({ outcome: 'rotated', version: 1 });
    const planned = await r.queue.getJobs(['delayed']);
    expect(planned.map((j) => [j.id, j.data as unknown])).toEqual([[refreshPlanId(C1, 1), { clientKey: C1, tenantId: 't1', reason: 'scheduled', seenVersion: 1 }]]);
    const state = await new ClientAuthStore(r.redis, prefix, C1).state();
    // The plan of the token's lifetime (the refresher estimates Redis's clock at the store: a few ms off).
    expect(Math.abs(state.marginMs! - tokenPlan(r.auth.settings, exp * 1000 - state.issuedAt!).marginMs)).toBeLessThanOrEqual(50);
    // Due at the margin: expiry - margin, counted from the store.
    const job = planned[0]!;
    expect(job.timestamp + job.delay).toBeGreaterThanOrEqual(exp * 1000 - state.marginMs! - 1_000);
    expect(job.timestamp + job.delay).toBeLessThanOrEqual(exp * 1000 - state.marginMs! + 1_000);
  });
});

describe('the backstop check of a client with no token (issue 40)', () => {
  it('fetches nothing: the first token comes with the first request; a token stored is checked as before', async () => {
    const prefix = testPrefix('auth');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    let calls = 0;
    const exp = Math.floor(Date.now() / 1000) + 60;
    const r = await buildRig({ url: redis.url, prefix, settings: { requestTimeoutMs: 10_000 }, requestToken: async () => ((calls += 1), { accessToken: `tok-${calls}`, expiresAtMs: exp * 1000 }) });
    onTestFinished(() => r.close());
    const credentials = { clientId: 'c1', clientSecret: new Secret('s'), authUrl: NO_AUTH_URL };
    expect(await r.auth.refresher.rotate(C1, credentials, { reason: 'scheduled', tenantId: 't1' })).toEqual({ outcome: 'skipped', why: 'no-token', version: 0 });
    expect(calls).toBe(0);
    expect(await r.auth.refresher.rotate(C1, credentials, { reason: 'missing', tenantId: 't1' })).toMatchObject({ outcome: 'rotated', version: 1 });
    expect(await r.auth.refresher.rotate(C1, credentials, { reason: 'scheduled', tenantId: 't1' })).toEqual({ outcome: 'skipped', why: 'fresh', version: 1 });
    expect(calls).toBe(1);
  });
});

describe('the stored fingerprint of a refused secret (issue 17)', () => {
  it('is keyed (HMAC under the deployment\'s key), not a plain SHA-256 a weak secret could be guessed from', async () => {
    const prefix = testPrefix('auth');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const refused = async (): Promise<never> => {
      throw new CollectionsError({ code: 'AUTH_CREDENTIALS_REJECTED', retryable: false, message: 'refused', route: 'POST /auth/v1/api-key/auth', status: 401 });
    };
    const r = await buildRig({ url: redis.url, prefix, settings: {}, requestToken: refused });
    onTestFinished(() => r.close());
    const secret = 'hunter2';
    expect(await r.auth.refresher.rotate(C1, { clientId: 'c1', clientSecret: new Secret(secret), authUrl: NO_AUTH_URL }, { reason: 'manual' })).toMatchObject({ outcome: 'rejected' });
    const stored = await r.redis.hget(new ClientAuthStore(r.redis, prefix, C1).keys.failure, 'secretFingerprint');
    const sha = (text: string) => createHash('sha256').update(text).digest('hex');
    expect(stored).toMatch(/^[0-9a-f]{32}$/);
    for (const plain of [sha(secret), sha(`c1\0${secret}`)]) expect(plain.startsWith(stored!.slice(0, 16))).toBe(false);
    expect(stored).toBe(createHmac('sha256', TEST_FINGERPRINT_KEY).update(`c1\0${secret}`).digest('hex').slice(0, 32));
    // Another key, another fingerprint: without the key a guess cannot be checked.
    expect(secretFingerprint('c1', new Secret(secret), Buffer.from('another-key-of-16+chars'))).not.toBe(stored);
  });
});

describe('gate', () => {
  it('holds new requests while closed and lets them through when it expires (a dead refresher stalls nobody for longer)', async () => {
    const { rig: r, prefix } = await rig();
    await seed(r.redis, prefix, C1, 'tok-1', Date.now() + 60_000);
    const provider = r.auth.providerFor(tenant('t1', 'c1', 's'));
    const store = new ClientAuthStore(r.redis, prefix, C1);
    await store.closeGate('dead-refresher', 600);
    expect((await r.auth.status(C1)).gateClosed).toBe(true);
    const waiting = provider.acquire();
    expect(await settle(waiting)).toBe('pending');
    const lease = await waiting;
    expect(lease.token).toBe('tok-1');
    expect((await r.auth.status(C1)).gateClosed).toBe(false);
    await lease.release();
  });

  it('wakes the waiters at once when the refresher opens it', async () => {
    const { rig: r, prefix } = await rig({ pollMs: 10_000, acquireTimeoutMs: 5_000 });
    await seed(r.redis, prefix, C1, 'tok-1', Date.now() + 60_000);
    const provider = r.auth.providerFor(tenant('t1', 'c1', 's'));
    const store = new ClientAuthStore(r.redis, prefix, C1);
    await store.closeGate('refresher', 60_000);
    // A request budget of 3 s (the client passes one): polling alone would not make it.
    const waiters = Array.from({ length: 10 }, () => provider.acquire(AbortSignal.timeout(3_000)));
    expect(await settle(Promise.race(waiters))).toBe('pending');
    // Polling is 10 s and the wait bound 5 s here: only the pub/sub message can wake them before they give up.
    expect(await store.openGate('someone-else')).toBe(false);
    expect(await store.openGate('refresher')).toBe(true);
    const leases = await Promise.all(waiters);
    expect(new Set(leases.map((l) => l.token))).toEqual(new Set(['tok-1']));
    await Promise.all(leases.map((l) => l.release()));
  });
});

describe('subscriber', () => {
  it('works from a producer-role connection (offline queue off, lazy), as the CLI has', async () => {
    const prefix = testPrefix('auth');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const producer = await connectRedis(createRedis(redis.url, 'producer'), redis.url);
    const queue = new Queue(QUEUES.refreshToken, { connection: producer, prefix });
    const auth = createAuth({ redis: producer, prefix, authUrl: NO_AUTH_URL, jobs: refreshJobs(queue), logger: quietLogger(), settings: { pollMs: 10_000, acquireTimeoutMs: 5_000 } });
    try {
      await seed(producer, prefix, C1, 'tok-1', Date.now() + 60_000);
      const store = new ClientAuthStore(producer, prefix, C1);
      await store.closeGate('refresher', 60_000);
      const provider = auth.providerFor(tenant('t1', 'c1', 's'));
      const waiting = provider.acquire(AbortSignal.timeout(3_000)); // polling alone would not make it
      expect(await settle(waiting)).toBe('pending');
      await store.openGate('refresher');
      expect((await waiting).token).toBe('tok-1');
    } finally {
      await auth.close();
      await queue.close();
      producer.disconnect();
    }
  });
});

describe('missing token', () => {
  it('asks for one deduplicated on-demand rotation however many requests wait, and gives up after the bound', async () => {
    const { rig: r } = await rig({ acquireTimeoutMs: 600 });
    // Three tenants sharing one client (one provider each): the queue's deduplication, not only the
    // provider's own throttle, must fold their asks into one job.
    const providers = ['t1', 't2', 't3'].map((id) => r.auth.providerFor(tenant(id, 'c1', 's')));
    const results = await Promise.allSettled(Array.from({ length: 21 }, (_, i) => providers[i % 3]!.acquire()));
    expect(results.every((x) => x.status === 'rejected')).toBe(true);
    const first = results[0]!;
    expect(first.status === 'rejected' && (first.reason as { code?: string }).code).toBe('COLLECTIONS_TRANSIENT');
    const jobs = await r.queue.getJobs(['waiting', 'delayed', 'active']);
    expect(jobs.length).toBe(1);
    expect(jobs[0]!.data).toMatchObject({ clientKey: C1, reason: 'missing' });
    // Ids only: never a secret or a token in job data.
    expect(JSON.stringify(jobs[0]!.data)).not.toContain('"s"');
  });
});

describe('failure state', () => {
  it('makes acquire fail fast with a clear auth error for the refused secret only', async () => {
    const { rig: r, prefix } = await rig({ acquireTimeoutMs: 400 });
    const store = new ClientAuthStore(r.redis, prefix, C1);
    await store.closeGate('refresher', 5_000);
    const f = await store.recordFailure('refresher', 'the token endpoint refused the client credentials', r.auth.fingerprint('c1', new Secret('wrong')), 60_000, 600_000);
    expect(f.failures).toBe(1);
    expect((await r.auth.status(C1)).gateClosed).toBe(false);

    const wrong = r.auth.providerFor(tenant('t1', 'c1', 'wrong'));
    const err = await wrong.acquire().then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CredentialsRejectedError);
    const e = err as CredentialsRejectedError;
    expect(e.code).toBe('AUTH_CREDENTIALS_REJECTED');
    expect(e.message).toContain('tenant "t1" (client "c1")');
    expect(e.message).toContain('tenants file');
    expect(e.message).not.toContain('wrong');
    expect(JSON.stringify(e)).not.toContain('wrong');

    // A fixed secret (another fingerprint) is not held by the old failure: it waits for a token instead.
    const fixed = r.auth.providerFor(tenant('t1', 'c1', 'right'));
    const err2 = await fixed.acquire().then(() => undefined, (x: unknown) => x);
    expect((err2 as { code?: string }).code).toBe('COLLECTIONS_TRANSIENT');

    const again = await store.recordFailure('x', 'refused', r.auth.fingerprint('c1', new Secret('wrong')), 60_000, 600_000);
    expect(again.failures).toBe(2);
    const status = await r.auth.status(C1);
    expect(status.failure?.failures).toBe(2);
    expect(status.failure!.nextAttemptAt - Date.now()).toBeGreaterThan(60_000);
  });
});

describe('store', () => {
  it('is fenced by the lock and by the version, and opens the gate either way', async () => {
    const { rig: r, prefix } = await rig();
    const v1 = await seed(r.redis, prefix, C1, 'tok-1', Date.now() + 60_000);
    expect(v1).toBe(1);
    const store = new ClientAuthStore(r.redis, prefix, C1);
    await r.redis.set(store.keys.lock, 'owner-a', 'PX', 5_000);
    await store.closeGate('owner-b', 5_000);
    expect(await store.store('owner-b', 1, 'tok-stale', Date.now() + 60_000)).toEqual({ ok: false, why: 'lock-lost' });
    await store.closeGate('owner-a', 5_000);
    expect(await store.store('owner-a', 0, 'tok-stale', Date.now() + 60_000)).toEqual({ ok: false, why: 'version-moved' });
    expect((await r.auth.status(C1)).gateClosed).toBe(false);
    expect(await store.store('owner-a', 1, 'tok-2', Date.now() + 60_000)).toMatchObject({ ok: true, version: 2 });
    expect(await r.redis.hget(store.keys.token, 'token')).toBe('tok-2');
  });
});
