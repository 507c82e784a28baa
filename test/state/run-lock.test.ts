import type { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createRedis, connectRedis } from '../../src/redis/connection.js';
import { keepAlive, LockLostError } from '../../src/redis/lock.js';
import { TenantRunLock } from '../../src/state/run-lock.js';
import { spawnRedis, testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

function aborted(signal: AbortSignal): Promise<unknown> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve(signal.reason);
    else signal.addEventListener('abort', () => resolve(signal.reason), { once: true });
  });
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('TenantRunLock', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('one owner at a time; another owner can neither extend nor release', async () => {
    const prefix = testPrefix();
    const lock = new TenantRunLock(redis, prefix);
    expect(lock.key('acme')).toBe(`${keyBase(prefix)}:lock:run:{acme}`);
    expect(await lock.acquire('acme', 'a', 10_000)).toBe(true);
    expect(await lock.acquire('acme', 'b', 10_000)).toBe(false);
    expect(await lock.acquire('beta', 'b', 10_000)).toBe(true);
    expect(await lock.extend('acme', 'b', 60_000)).toBe(false);
    expect(await lock.release('acme', 'b')).toBe(false);
    expect(await lock.holder('acme')).toBe('a');
    expect(await lock.extend('acme', 'a', 60_000)).toBe(true);
    expect(await redis.pttl(lock.key('acme'))).toBeGreaterThan(10_000);
    expect(await lock.release('acme', 'a')).toBe(true);
    expect(await lock.holder('acme')).toBeUndefined();
    expect(await lock.acquire('acme', 'b', 10_000)).toBe(true);
  });

  it('keepAlive holds the lock past its TTL', async () => {
    const lock = new TenantRunLock(redis, testPrefix());
    expect(await lock.acquire('acme', 'a', 1_500)).toBe(true);
    const ka = lock.keepAlive('acme', 'a', 1_500, 100);
    await sleep(2_200);
    expect(ka.signal.aborted).toBe(false);
    expect(await lock.holder('acme')).toBe('a');
    ka.stop();
    expect(ka.signal.aborted).toBe(false);
  });

  it('keepAlive signals loss when the key is deleted behind its back', async () => {
    const lock = new TenantRunLock(redis, testPrefix());
    await lock.acquire('acme', 'a', 5_000);
    let reported: LockLostError | undefined;
    const ka = lock.keepAlive('acme', 'a', 5_000, 50, (err) => (reported = err));
    await redis.del(lock.key('acme'));
    const reason = await aborted(ka.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect((reason as LockLostError).code).toBe('LOCK_LOST');
    expect(reported).toBe(reason);
    // it does not recreate the key
    expect(await lock.holder('acme')).toBeUndefined();
  });

  it('keepAlive signals loss when another owner holds the key', async () => {
    const lock = new TenantRunLock(redis, testPrefix());
    await lock.acquire('acme', 'a', 5_000);
    const ka = keepAlive(lock.lock('acme', 'a', 5_000), 50);
    await redis.set(lock.key('acme'), 'b');
    expect(String((await aborted(ka.signal)) as Error)).toMatch(/no longer held by a/);
    expect(await lock.holder('acme')).toBe('b');
  });

  it('keepAlive signals loss when Redis stays unreachable for a TTL, even with commands that never fail', async () => {
    const spawned = await spawnRedis({ appendonly: false });
    onTestFinished(() => spawned.stop());
    const client = await connectRedis(createRedis(spawned.url, 'worker'), spawned.url);
    onTestFinished(() => client.disconnect());
    client.on('error', () => undefined);
    const lock = new TenantRunLock(client, testPrefix());
    expect(await lock.acquire('acme', 'a', 800)).toBe(true);
    const ka = lock.keepAlive('acme', 'a', 800, 100);
    await spawned.kill();
    const reason = await aborted(ka.signal);
    expect(reason).toBeInstanceOf(LockLostError);
    expect(String(reason)).toMatch(/could not be extended for 800 ms/);
  });
});
