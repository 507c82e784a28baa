import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { IntentStore } from '../../src/state/intents.js';
import { PendingStore } from '../../src/state/pending.js';
import { StateCorruptError } from '../../src/state/stored.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

describe('IntentStore and PendingStore', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('intents: begin, read one or many, list, end', async () => {
    const s = new IntentStore(redis, testPrefix());
    await s.begin('acme', 'c1', { name: 'Acme Ltd', at: 10, runId: 'run-1' });
    await s.begin('acme', 'c2', { name: 'Beta', at: 11, runId: 'run-1' });
    await s.begin('acme', '__proto__', { name: 'Odd id', at: 12, runId: 'run-1' });
    await s.begin('acme', 'c1', { name: 'Acme Ltd', at: 20, runId: 'run-2' });
    expect(await s.get('acme', 'c1')).toEqual({ name: 'Acme Ltd', at: 20, runId: 'run-2' });
    expect(await s.get('beta', 'c1')).toBeUndefined();
    const many = await s.getMany('acme', ['c1', 'c2', 'c3']);
    expect([...many.keys()].sort()).toEqual(['c1', 'c2']);
    const list = await s.list('acme');
    expect(list.map((i) => i.platformId).sort()).toEqual(['__proto__', 'c1', 'c2']);
    await s.end('acme', ['c1', '__proto__']);
    expect((await s.list('acme')).map((i) => i.platformId)).toEqual(['c2']);
    expect(await s.count('acme')).toBe(1);
    await expect(s.begin('acme', 'c9', { name: 'x', at: Number.NaN, runId: 'r' })).rejects.toThrow();
  });

  it('intents: a corrupted value names the key and field', async () => {
    const prefix = testPrefix();
    const s = new IntentStore(redis, prefix);
    await redis.hset(s.key('acme'), 'c1', '{"name":"x"}');
    await expect(s.get('acme', 'c1')).rejects.toBeInstanceOf(StateCorruptError);
    await expect(s.list('acme')).rejects.toThrow(`${keyBase(prefix)}:intents:{acme} field "c1"`);
  });

  it('pending: keeps the earliest firstSeenAt and the latest record', async () => {
    const s = new PendingStore(redis, testPrefix());
    await s.add('acme', [{ id: 'i1', record: { v: 1 }, firstSeenAt: 5_000, waitingFor: 'c1' }]);
    await s.add('acme', [{ id: 'i1', record: { v: 2 }, firstSeenAt: 9_000, waitingFor: 'c1' }]);
    await s.add('acme', [
      { id: 'i2', record: { v: 1 }, firstSeenAt: 7_000, waitingFor: 'c2' },
      { id: 'i2', record: { v: 2 }, firstSeenAt: 3_000, waitingFor: 'c3' },
    ]);
    const list = (await s.list('acme')).sort((a, b) => a.id.localeCompare(b.id));
    expect(list).toEqual([
      { id: 'i1', record: { v: 2 }, firstSeenAt: 5_000, waitingFor: 'c1' },
      { id: 'i2', record: { v: 2 }, firstSeenAt: 3_000, waitingFor: 'c3' },
    ]);
    expect(await s.count('acme')).toBe(2);
    await s.remove('acme', ['i1', 'nope']);
    expect((await s.list('acme')).map((p) => p.id)).toEqual(['i2']);
    await s.add('acme', []);
    await s.remove('acme', []);
    expect(await s.count('beta')).toBe(0);
  });

  it('pending: a corrupted value names the key and field', async () => {
    const prefix = testPrefix();
    const s = new PendingStore(redis, prefix);
    await redis.hset(s.key('acme'), 'i1', 'oops');
    await expect(s.list('acme')).rejects.toThrow(`${keyBase(prefix)}:pending:{acme} field "i1"`);
    await redis.hset(s.key('acme'), 'i1', '12|{"record":1}');
    await expect(s.list('acme')).rejects.toBeInstanceOf(StateCorruptError);
  });
});
