/**
 * The per-process lease pool (issue 14) against real Redis: leases taken in one script for the requests of a
 * turn, handed on without Redis, given back when unused; a rotation's drain makes a holder give its idle leases
 * back at once while the ones in use still hold the drain; a killed process's pooled leases expire on their own.
 */
import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { authClientKey } from '../../src/auth/index.js';
import { ClientAuthStore } from '../../src/auth/token-store.js';
import type { TokenProvider } from '../../src/collections/token-provider.js';
import { Secret } from '../../src/secret.js';
import { startSimulator } from '../../src/simulator/index.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';
import { spawnChild } from './children.js';
import { buildRig, eventually, NO_AUTH_URL, sleep, type AuthRig } from './harness.js';

const C1 = authClientKey(NO_AUTH_URL, 'c1');
const tenant = { id: 't1', collections: { clientId: 'c1', clientSecret: new Secret('s') }, inFlightLimit: 8 };

const redis = useTestRedis();

async function rig(prefix: string, settings: Parameters<typeof buildRig>[0]['settings']): Promise<AuthRig> {
  const r = await buildRig({ url: redis.url, prefix, settings: { pollMs: 50, ...settings } });
  onTestFinished(() => r.close());
  return r;
}

async function seed(client: Redis, prefix: string, token: string): Promise<ClientAuthStore> {
  const store = new ClientAuthStore(client, prefix, C1);
  await client.set(store.keys.lock, 'seeder', 'PX', 5_000);
  const r = await store.store('seeder', 0, token, Date.now() + 600_000);
  await client.del(store.keys.lock);
  if (!r.ok) throw new Error(`seed failed: ${r.why}`);
  return store;
}

/** Counts the commands a connection sends from now on. */
function countCommands(redis: Redis): string[] {
  const calls: string[] = [];
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((cmd: Parameters<Redis['sendCommand']>[0], stream?: Parameters<Redis['sendCommand']>[1]) => {
    calls.push(cmd.name);
    return send(cmd, stream);
  });
  return calls;
}

/**
 * Until the provider pools (its process subscribed to the client's channel): a lease given back then stays in
 * the pool (still counted in Redis); then until the unused pool has given it back.
 */
async function warmUp(provider: TokenProvider, store: ClientAuthStore): Promise<void> {
  await eventually(async () => {
    await (await provider.acquire()).release();
    return (await store.leaseCount()) > 0 ? true : undefined;
  }, 3_000, 'the pool live');
  await eventually(async () => ((await store.leaseCount()) === 0 ? true : undefined), 3_000, 'the warm-up lease back');
}

const settle = async <T>(p: Promise<T>): Promise<'pending' | 'settled'> =>
  Promise.race([p.then(() => 'settled' as const, () => 'settled' as const), sleep(300).then(() => 'pending' as const)]);

describe('lease pool', () => {
  it('takes the leases of one turn in one script, hands a returned lease on without Redis, and gives unused leases back', async () => {
    const prefix = testPrefix('pool');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const r = await rig(prefix, { requestTimeoutMs: 10_000, leaseHoldMs: 5_000 });
    const store = await seed(r.redis, prefix, 'tok-1');
    const provider = r.auth.providerFor(tenant);
    // Warm up: the scripts loaded and the subscription live (leases are pooled only then).
    await warmUp(provider, store);

    const calls = countCommands(r.redis);
    const leases = await Promise.all(Array.from({ length: 5 }, () => provider.acquire()));
    expect(leases.map((l) => l.token)).toEqual(Array(5).fill('tok-1'));
    expect(calls).toEqual(['evalsha']);
    expect(await store.leaseCount()).toBe(5);

    calls.length = 0;
    await leases[0]!.release();
    const next = await provider.acquire();
    expect(next.token).toBe('tok-1');
    expect(calls).toEqual([]);
    for (const l of [next, ...leases.slice(1)]) await l.release();
    expect(calls).toEqual([]);

    // Unused, the pool gives them back (long before their 15 s of life).
    await eventually(async () => ((await store.leaseCount()) === 0 ? true : undefined), 3_000, 'the idle leases back');
  });

  it('gives its idle leases back as soon as a drain starts; a lease in use still holds the drain until its request ends', async () => {
    const prefix = testPrefix('pool');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const holder = await rig(prefix, { requestTimeoutMs: 10_000, leaseHoldMs: 5_000 });
    const refresher = await rig(prefix, { requestTimeoutMs: 10_000, leaseHoldMs: 5_000 });
    const store = await seed(holder.redis, prefix, 'tok-1');
    const provider = holder.auth.providerFor(tenant);
    await warmUp(provider, store);

    const leases = await Promise.all(Array.from({ length: 4 }, () => provider.acquire()));
    // Three come back to the pool, idle; one stays in use.
    for (const l of leases.slice(1)) await l.release();
    expect(await store.leaseCount()).toBe(4);

    // Another process starts a rotation: closes the gate.
    const other = new ClientAuthStore(refresher.redis, prefix, C1);
    await refresher.redis.set(other.keys.lock, 'rotator', 'PX', 10_000);
    expect(await other.closeGate('rotator', 10_000)).toBe(4);
    await eventually(async () => ((await other.leaseCount()) === 1 ? true : undefined), 3_000, 'the idle leases given back');
    // The gate is closed: no pooled lease is handed out, a new request waits.
    const waiting = provider.acquire();
    expect(await settle(waiting)).toBe('pending');
    expect(await other.leaseCount()).toBe(1);
    // The request in flight ends: the drain is complete.
    await leases[0]!.release();
    await eventually(async () => ((await other.leaseCount()) === 0 ? true : undefined), 3_000, 'the lease in use given back');
    expect(await other.openGate('rotator')).toBe(true);
    expect((await waiting).token).toBe('tok-1');
    await (await waiting).release();
  });

  it('does not keep its leases from another process waiting under the in-flight limit', async () => {
    const prefix = testPrefix('pool');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const busy = await rig(prefix, { requestTimeoutMs: 10_000, leaseHoldMs: 5_000 });
    const other = await rig(prefix, { requestTimeoutMs: 10_000, leaseHoldMs: 5_000 });
    const store = await seed(busy.redis, prefix, 'tok-1');
    const limited = { ...tenant, inFlightLimit: 2 };
    const mine = busy.auth.providerFor(limited);
    await warmUp(mine, store);

    // Three request loops in one process keep its two leases busy, passing them on as they end.
    let stop = false;
    const loops = Promise.all(
      Array.from({ length: 3 }, async () => {
        while (!stop) {
          const l = await mine.acquire();
          await sleep(2);
          await l.release();
        }
      }),
    );
    await eventually(async () => ((await store.leaseCount()) === 2 ? true : undefined), 3_000, 'the limit reached');
    // A request of another process waits under the limit, and gets a lease while the loops go on.
    const theirs = other.auth.providerFor(limited);
    // Starved, it would wait forever (the loops never stop on their own); 15 s leaves room for a loaded machine.
    const got = await theirs.acquire(AbortSignal.timeout(15_000));
    expect(got.token).toBe('tok-1');
    await got.release();
    stop = true;
    await loops;
  });

  it("lets a killed process's pooled leases expire by their lease TTL (request timeout plus hold)", async () => {
    const sim = await startSimulator({ clients: [{ clientId: 'c1', clientSecret: 's1' }], tokenLifetimeMs: 120_000, faults: { latencyMs: 20 } });
    onTestFinished(() => sim.close());
    const prefix = testPrefix('pool');
    onTestFinished(() => dropPrefix(redis.url, prefix));
    const settings = { requestTimeoutMs: 1_500, leaseHoldMs: 500, pollMs: 50 };
    const ttlMs = settings.requestTimeoutMs + settings.leaseHoldMs;
    const r = await buildRig({ url: redis.url, prefix, authUrl: sim.authUrl, settings });
    onTestFinished(() => r.close());
    const c1 = authClientKey(sim.authUrl, 'c1');
    await r.auth.refresher.rotate(c1, { clientId: 'c1', clientSecret: new Secret('s1'), authUrl: sim.authUrl }, { reason: 'manual' });
    const store = new ClientAuthStore(r.redis, prefix, c1);

    const child = spawnChild({
      redisUrl: redis.url, prefix, authUrl: sim.authUrl, baseUrl: sim.baseUrl, tenants: [{ id: 't1', clientId: 'c1', secret: 's1' }], tenantId: 't1',
      settings, startAt: 0, durationMs: 60_000, concurrency: 6, runWorker: false,
    });
    onTestFinished(() => child.kill());
    await child.next('ready');
    child.go();
    // Past one hold, so the child's pool has renewed its leases at least once.
    const served = (): number => Object.values(sim.counters().requests).reduce((n, byStatus) => n + (byStatus['200'] ?? 0), 0);
    await eventually(async () => (served() > 100 ? true : undefined), 20_000, 'the child hammering');
    await sleep(settings.leaseHoldMs * 2);
    expect(await store.leaseCount()).toBeGreaterThan(0);
    await child.kill();
    const killedAt = Date.now();
    const scores = (await r.redis.zrange(store.keys.leases, 0, -1, 'WITHSCORES')).filter((_, i) => i % 2 === 1).map(Number);
    expect(scores.length).toBeGreaterThan(0);
    // None outlives the kill by more than its TTL, and all of them are gone once it has passed.
    expect(Math.max(...scores)).toBeLessThanOrEqual(killedAt + ttlMs);
    await eventually(async () => ((await store.leaseCount()) === 0 ? true : undefined), ttlMs + 2_000, 'the leases of the killed process expired');
  });
});
