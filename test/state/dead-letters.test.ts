import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_MAX_BYTES, DeadLetterStore, type DeadLetter, type DeadLetterEntry } from '../../src/state/dead-letters.js';
import { StateCorruptError } from '../../src/state/stored.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

const base = { reason: 'rejected', code: 'COLLECTIONS_REJECTED', runId: 'run-1' };

describe('DeadLetterStore', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('keeps one entry per (entity, platform id): a repeat updates it and counts the attempt', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 1000, record: { id: 'i1', v: 1 }, detail: { total: 'must be >= 0' } }]);
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 2000, reason: 'again', runId: 'run-2', record: { id: 'i1', v: 2 } }]);
    // the same id under another entity is another entry
    await s.add('acme', [{ ...base, entity: 'contacts', platformId: 'i1', at: 1500 }]);
    expect(await s.count('acme')).toBe(2);
    const [entry] = await s.list('acme', { entity: 'invoices' });
    expect(entry).toMatchObject({ key: 'invoices:id:i1', attempts: 2, firstAt: 1000, at: 2000, reason: 'again', runId: 'run-2', record: { id: 'i1', v: 2 } });
    expect(entry?.detail).toBeUndefined();
    // twice in one batch is one entry too
    await s.add('acme', [{ ...base, entity: 'payments', platformId: 'p1', at: 3000 }, { ...base, entity: 'payments', platformId: 'p1', at: 3001 }]);
    expect((await s.list('acme', { entity: 'payments' })).map((e) => [e.key, e.attempts])).toEqual([['payments:id:p1', 2]]);
    expect(await s.counts('acme')).toEqual({ total: 3, byEntity: { contacts: 1, invoices: 1, payments: 1 } });
  });

  it('keys entries without an id by their place', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    await s.add('acme', [
      { ...base, entity: 'contacts', place: 'contacts.ndjson:7', code: 'BAD_RECORD', at: 1 },
      { ...base, entity: 'contacts', place: 'contacts.ndjson:7', code: 'BAD_RECORD', at: 2 },
      { ...base, entity: 'contacts', place: 'contacts.ndjson:9', code: 'BAD_RECORD', at: 3 },
    ]);
    const list = await s.list('acme');
    expect(list.map((e) => [e.key, e.attempts])).toEqual([
      ['contacts:place:contacts.ndjson:9', 1],
      ['contacts:place:contacts.ndjson:7', 2],
    ]);
    await expect(s.add('acme', [{ ...base, entity: 'contacts', at: 1 }])).rejects.toThrow(/platformId or a place/);
  });

  it('lists newest first, by entity, with offset and limit', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    const entries: DeadLetter[] = Array.from({ length: 30 }, (_, i) => ({
      ...base,
      entity: i % 3 === 0 ? 'contacts' : 'invoices',
      platformId: `r${i}`,
      at: 10_000 + i,
    }));
    await s.add('acme', entries);
    const page1 = await s.list('acme', { limit: 5 });
    expect(page1.map((e) => e.platformId)).toEqual(['r29', 'r28', 'r27', 'r26', 'r25']);
    const page2 = await s.list('acme', { limit: 5, offset: 5 });
    expect(page2.map((e) => e.platformId)).toEqual(['r24', 'r23', 'r22', 'r21', 'r20']);
    const contacts = await s.list('acme', { entity: 'contacts', limit: 100 });
    expect(contacts).toHaveLength(10);
    expect(contacts[0]?.platformId).toBe('r27');
    expect(contacts.every((e) => e.entity === 'contacts')).toBe(true);
    expect(await s.counts('acme')).toEqual({ total: 30, byEntity: { contacts: 10, invoices: 20, payments: 0 } });
  });

  it('removes by reference or key, from the listing and the counts', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    await s.add('acme', [
      { ...base, entity: 'invoices', platformId: 'i1', at: 1 },
      { ...base, entity: 'invoices', platformId: 'i2', at: 2 },
      { ...base, entity: 'contacts', place: 'f:3', at: 3 },
    ]);
    expect(await s.remove('acme', [{ entity: 'invoices', platformId: 'i1' }, 'contacts:place:f:3', { entity: 'invoices', platformId: 'never' }])).toBe(2);
    expect((await s.list('acme')).map((e) => e.key)).toEqual(['invoices:id:i2']);
    expect(await s.counts('acme')).toEqual({ total: 1, byEntity: { contacts: 0, invoices: 1, payments: 0 } });
    // a re-add after removal starts a new entry
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 9 }]);
    expect((await s.list('acme', { limit: 1 }))[0]).toMatchObject({ key: 'invoices:id:i1', attempts: 1, firstAt: 9 });
  });

  it('take pages oldest first for replay; pushed records leave, failures come back newer and are not retaken', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    await s.add(
      'acme',
      Array.from({ length: 25 }, (_, i) => ({ ...base, entity: 'invoices' as const, platformId: `i${String(i).padStart(2, '0')}`, at: 100 + (i % 5), record: { id: i } })),
    );
    await s.add('acme', [{ ...base, entity: 'contacts', platformId: 'c1', at: 50, record: { id: 'c1' } }]);
    const until = 1_000;
    const seen: DeadLetterEntry[] = [];
    let after: string | undefined;
    let calls = 0;
    do {
      const page = await s.take('acme', { entity: 'invoices', limit: 10, until, ...(after === undefined ? {} : { after }) });
      calls += 1;
      seen.push(...page.entries);
      // replay: even-numbered records push fine (removed), odd ones fail again (updated, newer than `until`)
      await s.remove('acme', page.entries.filter((e) => Number((e.record as { id: number }).id) % 2 === 0).map((e) => e.key));
      await s.add('acme', page.entries.filter((e) => Number((e.record as { id: number }).id) % 2 === 1).map((e) => ({ ...base, entity: e.entity, platformId: e.platformId!, at: 2_000, record: e.record })));
      after = page.next;
    } while (after !== undefined);
    expect(calls).toBe(3);
    expect(seen).toHaveLength(25);
    expect(new Set(seen.map((e) => e.key)).size).toBe(25);
    // oldest first: all at=100 before at=101
    expect(seen.slice(0, 5).every((e) => e.at === 100)).toBe(true);
    expect(seen.every((e) => e.record !== undefined)).toBe(true);
    const left = await s.list('acme', { entity: 'invoices', limit: 100 });
    expect(left).toHaveLength(12);
    expect(left.every((e) => e.attempts === 2 && e.at === 2_000)).toBe(true);
    expect((await s.take('acme', { entity: 'invoices', until })).entries).toEqual([]);
    expect((await s.take('acme')).entries.map((e) => e.key)[0]).toBe('contacts:id:c1');
  });

  it('caps a stored record or detail at 16 KB, with a note', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    const big = { id: 'i1', notes: 'x'.repeat(DEAD_LETTER_MAX_BYTES) };
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 1, record: big, detail: { errors: ['y'.repeat(20_000)] } }]);
    const [e] = await s.list('acme');
    expect(e?.record).toBeUndefined();
    expect(e?.truncated?.record).toBeGreaterThan(DEAD_LETTER_MAX_BYTES);
    expect(e?.truncated?.detail).toBeGreaterThan(20_000);
    expect(typeof e?.detail).toBe('string');
    expect(String(e?.detail)).toMatch(/truncated: \d+ bytes/);
    expect(String(e?.detail).length).toBeLessThan(3_000);
    const stored = await redis.hget(s.key('acme'), 'invoices:id:i1');
    expect(stored!.length).toBeLessThan(4_000);
  });

  it('clear removes all of a tenant and nothing of another', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 1 }]);
    await s.add('beta', [{ ...base, entity: 'invoices', platformId: 'i1', at: 1 }]);
    await s.clear('acme');
    expect(await s.counts('acme')).toEqual({ total: 0, byEntity: { contacts: 0, invoices: 0, payments: 0 } });
    expect(await s.count('beta')).toBe(1);
  });

  it('a corrupted value gives an error naming the key and field', async () => {
    const prefix = testPrefix();
    const s = new DeadLetterStore(redis, prefix);
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 1 }]);
    await redis.hset(s.key('acme'), 'invoices:id:i1', '1|1|1|{"entity":"nope"}');
    await expect(s.list('acme')).rejects.toBeInstanceOf(StateCorruptError);
    await expect(s.list('acme')).rejects.toThrow(`${keyBase(prefix)}:dead:{acme} field "invoices:id:i1"`);
    await redis.hset(s.key('acme'), 'invoices:id:i1', 'garbage');
    await expect(s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 2 }])).rejects.toThrow(`${keyBase(prefix)}:dead:{acme} field "invoices:id:i1"`);
    await expect(s.remove('acme', ['invoices:id:i1'])).rejects.toBeInstanceOf(StateCorruptError);
  });

  it('keeps the run that made an entry (firstRunId) apart from the last run that tried it (runId), and finds the entries a run made', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    expect(await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 1000, runId: 'run-7' }, { ...base, entity: 'contacts', platformId: 'c1', at: 1001, runId: 'run-7' }])).toBe(2);
    // run-8 tries i1 again and fails it again; it makes c2
    expect(await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 2000, runId: 'run-8' }, { ...base, entity: 'contacts', platformId: 'c2', at: 2001, runId: 'run-8' }])).toBe(1);
    const [i1] = await s.list('acme', { entity: 'invoices' });
    expect(i1).toMatchObject({ firstRunId: 'run-7', runId: 'run-8', attempts: 2, firstAt: 1000, at: 2000 });
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 3000, runId: 'run-9' }]);
    expect((await s.list('acme', { entity: 'invoices' }))[0]).toMatchObject({ firstRunId: 'run-7', runId: 'run-9', attempts: 3 });
    // made by run-7: i1 (tried since by run-8 and run-9) and c1, found from run-7's start, a page of one at a time
    const by7 = await s.madeBy('acme', 'run-7', 900, { pageSize: 1 });
    expect(by7.entries.map((e) => e.key).sort()).toEqual(['contacts:id:c1', 'invoices:id:i1']);
    expect(by7.more).toBe(false);
    expect((await s.madeBy('acme', 'run-8', 1500)).entries.map((e) => e.key)).toEqual(['contacts:id:c2']);
    expect((await s.madeBy('acme', 'run-7', 900, { pageSize: 1, pages: 1 })).more).toBe(true);
    // with a limit, the reading stops once more than the limit are found: the first (newest) of them, and more
    const one = await s.madeBy('acme', 'run-7', 900, { pageSize: 1, limit: 1 });
    expect(one.entries.map((e) => e.key)).toEqual([by7.entries.map((e) => e.key)[0]]);
    expect(one.more).toBe(true);
    const two = await s.madeBy('acme', 'run-7', 900, { pageSize: 1, limit: 2 });
    expect(two.entries).toHaveLength(2);
    expect(two.more).toBe(false);
  });

  it('reads an entry written before firstRunId was kept as made by its runId, and keeps that run as its maker when it fails again', async () => {
    const s = new DeadLetterStore(redis, testPrefix());
    await redis.hset(s.key('acme'), 'invoices:id:i1', '1|1000|1000|{"entity":"invoices","platformId":"i1","reason":"r","code":"c","runId":"run-3","at":1000}');
    await redis.zadd(`${s.key('acme')}:by:all`, 0, '000000000001000|invoices:id:i1');
    expect((await s.list('acme'))[0]).toMatchObject({ firstRunId: 'run-3', runId: 'run-3' });
    await s.add('acme', [{ ...base, entity: 'invoices', platformId: 'i1', at: 2000, runId: 'run-4' }]);
    expect((await s.list('acme'))[0]).toMatchObject({ firstRunId: 'run-3', runId: 'run-4', attempts: 2 });
  });
});
