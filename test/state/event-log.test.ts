/**
 * The event log against a real Redis: order of record, an id recorded twice kept once, the count and age bounds,
 * pages with type and tenant filters whose `more` says whether a match follows, the delivery state, and every key
 * under one hash tag (one Cluster slot).
 */
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { tenantEvent, type NotifyEvent } from '../../src/notify/events.js';
import { EventLog } from '../../src/state/event-log.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';

const DAY = 86_400_000;
const created = (tenantId: string, at: number): NotifyEvent => tenantEvent({ type: 'tenant.created', tenantId, source: 'api', platform: 'memory', at });
const deleted = (tenantId: string, at: number): NotifyEvent => tenantEvent({ type: 'tenant.deleted', tenantId, source: 'api', at });

describe('EventLog', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('keeps events in the order recorded, an id once, and pages them oldest first with filters', async () => {
    const log = new EventLog(redis, testPrefix(), { maxCount: 100, maxAgeMs: DAY });
    const events = [created('acme', 1), created('beta', 2), deleted('acme', 3), created('acme', 4), deleted('beta', 5)];
    for (const e of events) expect((await log.record(e, { state: 'pending', attempts: 0 })).added).toBe(true);
    expect(await log.record(events[0]!, { state: 'pending', attempts: 0 })).toEqual({ added: false, seq: 1 });

    const all = await log.page({ limit: 10 });
    expect(all.items.map((i) => i.event.id)).toEqual(events.map((e) => e.id));
    expect(all.more).toBe(false);
    expect(all.items[0]).toMatchObject({ seq: 1, tenantId: 'acme', event: events[0], delivery: { state: 'pending', attempts: 0 } });

    // limit 1 over acme's tenant.created: two pages, the second says nothing follows (beta's entries after it are no match)
    const first = await log.page({ limit: 1, type: 'tenant.created', tenants: ['acme'] });
    expect(first.items.map((i) => i.event.id)).toEqual([events[0]!.id]);
    expect(first.more).toBe(true);
    const second = await log.page({ after: first.last, limit: 1, type: 'tenant.created', tenants: ['acme'] });
    expect(second.items.map((i) => i.event.id)).toEqual([events[3]!.id]);
    expect(second.more).toBe(false);
    expect((await log.page({ limit: 10, tenants: ['beta'] })).items.map((i) => i.event.type)).toEqual(['tenant.created', 'tenant.deleted']);
    expect((await log.page({ limit: 10, tenants: [] })).items).toEqual([]);
    expect(await log.seqOf(events[2]!.id)).toBe(3);
    expect((await log.page({ after: 3, limit: 10 })).items.map((i) => i.seq)).toEqual([4, 5]);
  });

  it('writes the delivery state of a kept event only', async () => {
    const log = new EventLog(redis, testPrefix(), { maxCount: 100, maxAgeMs: DAY });
    const e = created('acme', 1);
    await log.record(e, { state: 'pending', attempts: 0 }, 1_000);
    expect(await log.setDelivery(e.id, { state: 'retrying', attempts: 1, statusCode: 503, error: 'http 503' }, 2_000)).toBe(true);
    expect((await log.get(e.id, 2_000))?.delivery).toEqual({ state: 'retrying', attempts: 1, statusCode: 503, error: 'http 503', at: 2_000 });
    expect(await log.setDelivery(created('gone', 9).id, { state: 'delivered', attempts: 1 })).toBe(false);
    expect(await log.get(created('gone', 9).id)).toBeUndefined();
  });

  it('is bounded by count (the oldest go) and by age (not listed, and gone at the next add)', async () => {
    const prefix = testPrefix();
    const log = new EventLog(redis, prefix, { maxCount: 3, maxAgeMs: DAY });
    const events = Array.from({ length: 5 }, (_, i) => created(`t${i}`, i));
    for (const [i, e] of events.entries()) await log.record(e, { state: 'pending', attempts: 0 }, 1_000 + i);
    expect((await log.page({ limit: 10, now: 1_010 })).items.map((i) => i.event.id)).toEqual(events.slice(2).map((e) => e.id));
    expect(await log.get(events[0]!.id, 1_010)).toBeUndefined();
    // a day later the three left are past the age: not listed, and the next add drops them
    expect((await log.page({ limit: 10, now: 1_004 + DAY + 1 })).items).toEqual([]);
    const late = created('late', 7);
    await log.record(late, { state: 'pending', attempts: 0 }, 1_004 + DAY + 1);
    expect(await redis.zcard(log.keysOf()[1]!)).toBe(1);
    expect(await redis.hlen(log.keysOf()[2]!)).toBe(1);
    expect(await redis.hlen(log.keysOf()[3]!)).toBe(1);
    // every key of the log under one hash tag
    expect(new Set(log.keysOf().map((k) => /\{[^}]+\}/.exec(k)?.[0]))).toEqual(new Set(['{events}']));
  });
});
