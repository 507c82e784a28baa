import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { CursorStore } from '../../src/state/cursors.js';
import { StateCorruptError } from '../../src/state/stored.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

describe('CursorStore', () => {
  let redis!: Redis;
  let url = '';
  useRedisClient((client, server) => {
    redis = client;
    url = server.url;
  });

  it('advances forward only, in (updatedAt, id) order, with equal timestamps and ids', async () => {
    const s = new CursorStore(redis, testPrefix());
    expect(await s.get('acme', 'invoices')).toBeUndefined();
    const a = { updatedAt: '2026-03-01T10:00:00Z', id: 'inv-2' };
    expect((await s.advance('acme', 'invoices', a)).moved).toBe(true);
    // the same position again: not a move
    expect((await s.advance('acme', 'invoices', { ...a })).moved).toBe(false);
    // same instant written with another offset, smaller id: behind
    expect((await s.advance('acme', 'invoices', { updatedAt: '2026-03-01T12:00:00+02:00', id: 'inv-1' })).moved).toBe(false);
    // earlier timestamp, larger id: behind
    expect((await s.advance('acme', 'invoices', { updatedAt: '2026-03-01T09:59:59.999Z', id: 'zzz' })).moved).toBe(false);
    expect((await s.get('acme', 'invoices'))?.highWater).toEqual(a);
    // same instant, larger id: ahead
    const b = { updatedAt: '2026-03-01T12:00:00+02:00', id: 'inv-3' };
    const moved = await s.advance('acme', 'invoices', b);
    expect(moved.moved).toBe(true);
    const state = await s.get('acme', 'invoices');
    expect(state?.highWater).toEqual(b);
    expect(state?.readPosition).toEqual(b);
    expect(state?.updatedAt).toBeGreaterThan(0);
  });

  it('moves the read position and the high-water mark separately when asked', async () => {
    const s = new CursorStore(redis, testPrefix());
    const early = { updatedAt: '2026-01-01T00:00:00Z', id: 'a' };
    const late = { updatedAt: '2026-02-01T00:00:00Z', id: 'a' };
    await s.advance('acme', 'contacts', late, 'highWater');
    await s.advance('acme', 'contacts', early, 'readPosition');
    let state = await s.get('acme', 'contacts');
    expect(state?.highWater).toEqual(late);
    expect(state?.readPosition).toEqual(early);
    await s.advance('acme', 'contacts', early); // behind the high-water mark, equal read position
    state = await s.get('acme', 'contacts');
    expect(state?.highWater).toEqual(late);
    expect(state?.readPosition).toEqual(early);
  });

  it('concurrent advances end at the greatest cursor', async () => {
    const prefix = testPrefix();
    const s = new CursorStore(redis, prefix);
    const other = new Redis(url);
    const s2 = new CursorStore(other, prefix);
    const cursors = Array.from({ length: 40 }, (_, i) => ({ updatedAt: `2026-04-01T00:00:${String(i % 7).padStart(2, '0')}Z`, id: `r${(i * 37) % 40}` }));
    await Promise.all(cursors.map((c, i) => (i % 2 === 0 ? s : s2).advance('acme', 'payments', c)));
    other.disconnect();
    const max = cursors.reduce((m, c) => (c.updatedAt > m.updatedAt || (c.updatedAt === m.updatedAt && c.id > m.id) ? c : m));
    expect((await s.get('acme', 'payments'))?.highWater).toEqual(max);
  });

  it('set writes as given; reset forgets one entity or all', async () => {
    const s = new CursorStore(redis, testPrefix());
    const c = { updatedAt: '2026-05-01T00:00:00Z', id: 'x' };
    await s.set('acme', 'contacts', { highWater: c, readPosition: c });
    await s.set('acme', 'invoices', { highWater: c });
    await s.reset('acme', 'contacts');
    expect(await s.get('acme', 'contacts')).toBeUndefined();
    expect((await s.get('acme', 'invoices'))?.highWater).toEqual(c);
    await s.reset('acme');
    expect(await s.get('acme', 'invoices')).toBeUndefined();
    await expect(s.advance('acme', 'invoices', { updatedAt: 'yesterday', id: 'x' })).rejects.toThrow(/not a timestamp/);
  });

  it('keeps one run checkpoint per tenant, with its entity, until cleared', async () => {
    const s = new CursorStore(redis, testPrefix());
    expect(await s.getCheckpoint('acme')).toBeUndefined();
    const since = { updatedAt: '2026-01-01T00:00:00Z', id: '' };
    await s.saveCheckpoint('acme', 'run-1', 'contacts', { pageToken: 'p2', since, counts: { created: 3 } });
    await s.saveCheckpoint('acme', 'run-1', 'invoices', { pageToken: 'p7', since, maxSeen: { updatedAt: '2026-02-01T00:00:00Z', id: 'i9' }, counts: { created: 10, skipped: 2 } });
    const cp = await s.getCheckpoint('acme');
    expect(cp?.runId).toBe('run-1');
    expect(cp?.data).toEqual({ entity: 'invoices', pageToken: 'p7', since, maxSeen: { updatedAt: '2026-02-01T00:00:00Z', id: 'i9' }, counts: { created: 10, skipped: 2 } });
    expect(await s.getCheckpoint('beta')).toBeUndefined();
    await s.clearCheckpoint('acme');
    expect(await s.getCheckpoint('acme')).toBeUndefined();
  });

  it('a corrupted value gives an error naming the key', async () => {
    const prefix = testPrefix();
    const s = new CursorStore(redis, prefix);
    await redis.hset(s.key('acme'), 'invoices', '{"highWater":{"updatedAt":5}}');
    await expect(s.get('acme', 'invoices')).rejects.toBeInstanceOf(StateCorruptError);
    await expect(s.advance('acme', 'invoices', { updatedAt: '2026-01-01T00:00:00Z', id: 'a' })).rejects.toThrow(`${keyBase(prefix)}:cursors:{acme} field "invoices"`);
    await redis.set(s.checkpointKey('acme'), 'not json');
    await expect(s.getCheckpoint('acme')).rejects.toThrow(`${keyBase(prefix)}:checkpoint:{acme}: not JSON`);
  });
});
