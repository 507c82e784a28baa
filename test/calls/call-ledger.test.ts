import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallLedger, CampaignStore, resolveUnknown, type EntryRecord } from '../../src/calls/index.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';

const A = '+966501234567';
const B = '+966551234567';
const HOUR = 3_600_000;

describe('the call ledger', () => {
  const redis = useTestRedis();
  let conn: Redis;
  let other: Redis;

  beforeAll(async () => {
    conn = new Redis(redis.url);
    other = new Redis(redis.url);
  });
  afterAll(async () => {
    conn?.disconnect();
    other?.disconnect();
  });

  it('gives each number to one request; the same request may reserve again, nobody else may', async () => {
    const ledger = new CallLedger(conn, testPrefix(), { cooldownMs: 24 * HOUR });
    expect(await ledger.reserve('acme', 'cmp-a', 0, [A, B])).toEqual([{ number: A, ok: true }, { number: B, ok: true }]);
    expect(await ledger.reserve('acme', 'cmp-a', 0, [A])).toEqual([{ number: A, ok: true }]);
    const refused = await ledger.reserve('acme', 'cmp-b', 0, [A]);
    expect(refused[0]).toMatchObject({ ok: false, holder: { campaign: 'cmp-a', request: 0, state: 'reserved' } });
    expect((await ledger.reserve('acme', 'cmp-a', 1, [A]))[0]?.ok).toBe(false);
    // Another tenant is another creditor: its own ledger.
    expect((await ledger.reserve('beta', 'cmp-c', 0, [A]))[0]?.ok).toBe(true);
  });

  it('lets exactly one of many concurrent reservations win, across connections', async () => {
    const prefix = testPrefix();
    const ledgers = [new CallLedger(conn, prefix, { cooldownMs: HOUR }), new CallLedger(other, prefix, { cooldownMs: HOUR })];
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ledgers[i % 2]!.reserve('acme', `cmp-${i}`, 0, [A, B])));
    expect(results.filter((r) => r[0]?.ok).length).toBe(1);
    expect(results.filter((r) => r[1]?.ok).length).toBe(1);
  });

  it('keeps a called number for the cooldown, an unknown one until released, and frees a failed one', async () => {
    const prefix = testPrefix();
    const ledger = new CallLedger(conn, prefix, { cooldownMs: 24 * HOUR, minHoldMs: 600_000 });
    await ledger.reserve('acme', 'cmp-a', 0, [A, B]);
    expect(await conn.pttl(ledger.key('acme', A))).toBeGreaterThan(23 * HOUR);
    expect(await ledger.called('acme', 'cmp-a', 0, [A])).toBe(1);
    expect(await ledger.called('acme', 'cmp-other', 0, [B])).toBe(0);
    expect(await ledger.unknown('acme', 'cmp-a', 0, [B])).toBe(1);
    const holds = await ledger.peek('acme', [A, B, '+966561234567']);
    expect(holds.get(A)?.state).toBe('called');
    expect(holds.get(B)?.state).toBe('unknown');
    expect(holds.size).toBe(2);
    // Only the holder's campaign can release; release frees the number for anyone.
    expect(await ledger.release('acme', 'cmp-x', undefined, [B])).toBe(0);
    expect(await ledger.release('acme', 'cmp-a', undefined, [B])).toBe(1);
    expect((await ledger.reserve('acme', 'cmp-b', 0, [B]))[0]?.ok).toBe(true);
    // Confirm turns only unknown holds into called ones.
    expect(await ledger.confirm('acme', 'cmp-a', [A])).toBe(0);
  });

  it('with no cooldown, refuses only while a call is in flight', async () => {
    const ledger = new CallLedger(conn, testPrefix(), { cooldownMs: 0 });
    await ledger.reserve('acme', 'cmp-a', 0, [A]);
    expect((await ledger.reserve('acme', 'cmp-b', 0, [A]))[0]?.ok).toBe(false);
    await ledger.called('acme', 'cmp-a', 0, [A]);
    expect((await ledger.reserve('acme', 'cmp-b', 0, [A]))[0]?.ok).toBe(true);
  });

  it('confirm and release touch only the unknown entries of the campaign named', async () => {
    const prefix = testPrefix();
    const ledger = new CallLedger(conn, prefix, { cooldownMs: 24 * HOUR });
    const store = new CampaignStore(conn, prefix);
    const now = Date.now();
    await store.create({ id: 'cmp-ops', tenant: 'acme', source: 'list', dryRun: false, createdAt: now, status: 'done' });
    const entry = (number: string, state: EntryRecord['state']): EntryRecord => ({ number, request: 0, state, label: number, at: now });
    await store.putEntries('cmp-ops', [entry(A, 'unknown'), entry(B, 'unknown'), entry('+966561234567', 'called')]);
    await store.addUnknown('acme', 'cmp-ops', [A, B]);
    await ledger.reserve('acme', 'cmp-ops', 0, [A, B]);
    await ledger.unknown('acme', 'cmp-ops', 0, [A, B]);

    await expect(resolveUnknown(store, ledger, { tenant: 'beta', campaignId: 'cmp-ops', action: 'release' })).rejects.toThrow('no campaign cmp-ops for tenant beta');
    await expect(resolveUnknown(store, ledger, { tenant: 'acme', campaignId: 'cmp-ops', action: 'release', number: '+966561234567' })).rejects.toThrow('is called, not unknown');

    const confirmed = await resolveUnknown(store, ledger, { tenant: 'acme', campaignId: 'cmp-ops', action: 'confirm', number: A });
    expect(confirmed.changed.map((e) => e.number)).toEqual([A]);
    expect((await ledger.peek('acme', [A])).get(A)?.state).toBe('called');
    const released = await resolveUnknown(store, ledger, { tenant: 'acme', campaignId: 'cmp-ops', action: 'release' });
    expect(released.changed.map((e) => e.number)).toEqual([B]);
    expect((await ledger.peek('acme', [B])).size).toBe(0);
    expect(Object.fromEntries((await store.entries('cmp-ops')).map((e) => [e.number, e.state]))).toEqual({ [A]: 'confirmed', [B]: 'released', '+966561234567': 'called' });
    expect((await store.unknownOf('acme')).size).toBe(0);
  });
});
