import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { packOldEntries } from '../../src/state/old-hashes.js';
import { RecordStateStore } from '../../src/state/record-state.js';
import { StateCorruptError } from '../../src/state/stored.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

describe('RecordStateStore', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('merges: a hash keeps the stored uuid, a uuid keeps the stored hash', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    await s.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'u-1' }, { id: 'c2', hash: 'h-2' }]);
    await s.setMany('acme', 'contacts', [{ id: 'c1', hash: 'h-1' }, { id: 'c2', uuid: 'u-2' }]);
    const got = await s.getMany('acme', 'contacts', ['c1', 'c2', 'missing']);
    expect(got.get('c1')).toEqual({ uuid: 'u-1', hash: 'h-1' });
    expect(got.get('c2')).toEqual({ uuid: 'u-2', hash: 'h-2' });
    expect(got.has('missing')).toBe(false);
    await s.setMany('acme', 'contacts', [{ id: 'c1', hash: 'h-1b' }]);
    expect(await s.get('acme', 'contacts', 'c1')).toEqual({ uuid: 'u-1', hash: 'h-1b' });
    expect(await s.get('acme', 'contacts', 'nope')).toBeUndefined();
  });

  it('applies entries for the same id in one call in order', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    await s.setMany('acme', 'invoices', [{ id: 'i1', uuid: 'u-old' }, { id: 'i1', hash: 'h' }, { id: 'i1', uuid: 'u-new' }]);
    expect(await s.get('acme', 'invoices', 'i1')).toEqual({ uuid: 'u-new', hash: 'h' });
    expect(await s.count('acme', 'invoices')).toBe(1);
  });

  it('keeps tenants and entities apart', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    await s.setMany('acme', 'contacts', [{ id: 'x', uuid: 'u-a' }]);
    await s.setMany('beta', 'contacts', [{ id: 'x', uuid: 'u-b' }]);
    await s.setMany('acme', 'invoices', [{ id: 'x', uuid: 'u-i' }]);
    expect((await s.get('acme', 'contacts', 'x'))?.uuid).toBe('u-a');
    expect((await s.get('beta', 'contacts', 'x'))?.uuid).toBe('u-b');
    expect((await s.get('acme', 'invoices', 'x'))?.uuid).toBe('u-i');
    expect(() => s.key('bad:tenant', 'contacts')).toThrow(/invalid tenant id/);
  });

  it('handles pages larger than one Lua unpack (5,000 entries) and scans them back in batches', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    const entries = Array.from({ length: 5000 }, (_, i) => ({ id: `p${i}`, uuid: `u${i}`, hash: `h${i}` }));
    await s.setMany('acme', 'payments', entries);
    expect(await s.count('acme', 'payments')).toBe(5000);
    const got = await s.getMany('acme', 'payments', entries.map((e) => e.id));
    expect(got.size).toBe(5000);
    expect(got.get('p4999')).toEqual({ uuid: 'u4999', hash: 'h4999' });
    const seen = new Map<string, string | undefined>();
    let batches = 0;
    for await (const batch of s.scan('acme', 'payments')) {
      batches += 1;
      for (const e of batch) seen.set(e.id, e.hash);
    }
    expect(seen.size).toBe(5000);
    expect(seen.get('p17')).toBe('h17');
    expect(batches).toBeGreaterThan(1);
  });

  it('clearHashes forgets hashes, keeps uuids, and drops entries that only had a hash', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    await s.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'u1', hash: 'h1' }, { id: 'c2', hash: 'h2' }]);
    await s.setMany('acme', 'invoices', [{ id: 'i1', uuid: 'ui', hash: 'hi' }]);
    await s.clearHashes('acme', 'contacts');
    expect(await s.get('acme', 'contacts', 'c1')).toEqual({ uuid: 'u1' });
    expect(await s.get('acme', 'contacts', 'c2')).toBeUndefined();
    expect(await s.get('acme', 'invoices', 'i1')).toEqual({ uuid: 'ui', hash: 'hi' });
    await s.clearHashes('acme');
    expect(await s.get('acme', 'invoices', 'i1')).toEqual({ uuid: 'ui' });
    // a later setMany of a hash merges with the kept uuid
    await s.setMany('acme', 'contacts', [{ id: 'c1', hash: 'h1b' }]);
    expect(await s.get('acme', 'contacts', 'c1')).toEqual({ uuid: 'u1', hash: 'h1b' });
  });

  it('clear removes all of a tenant and nothing of another', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    await s.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'u1' }]);
    await s.setMany('beta', 'contacts', [{ id: 'c1', uuid: 'u1' }]);
    await s.clear('acme');
    expect(await s.count('acme', 'contacts')).toBe(0);
    expect(await s.count('beta', 'contacts')).toBe(1);
  });

  it('rejects values it could not read back', async () => {
    const s = new RecordStateStore(redis, testPrefix());
    // Packed values are length-prefixed: a uuid with a "|" is data like any other.
    await s.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'a|b' }]);
    expect(await s.get('acme', 'contacts', 'c1')).toEqual({ uuid: 'a|b' });
    await expect(s.setMany('acme', 'contacts', [{ id: 'c1', uuid: 'AAAAAAAAAAAAAAAAAAAAAA' }])).rejects.toThrow(/reads as a compact uuid/);
    await expect(s.setMany('acme', 'contacts', [{ id: 'c1', uuid: '' }])).rejects.toThrow(/empty/);
  });

  it('a corrupted value gives an error naming the key and field', async () => {
    const prefix = testPrefix();
    const s = new RecordStateStore(redis, prefix);
    await s.setMany('acme', 'contacts', [{ id: 'ok', uuid: 'u' }]);
    // An old id map's entry (read by migrate-keys' packing alone) names the old map's key.
    await redis.hset(s.oldKey('acme', 'contacts'), 'bad', 'no-separator');
    const pack = packOldEntries(redis, prefix, 'acme', true);
    await expect(pack).rejects.toBeInstanceOf(StateCorruptError);
    await expect(packOldEntries(redis, prefix, 'acme', true)).rejects.toThrow(`${keyBase(prefix)}:ids:{acme}:contacts field "bad"`);
    // A packed bucket cut short: the packed map's key and the bucket are named.
    await redis.hset(s.key('acme', 'contacts'), '0', Buffer.from([40, 1, 2]));
    await expect(s.getMany('acme', 'contacts', ['ok'])).rejects.toThrow(`${keyBase(prefix)}:rec:{acme}:contacts field "bucket 0"`);
  });
});
