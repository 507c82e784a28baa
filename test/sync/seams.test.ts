/**
 * The seams of a sync run, tested directly (issue 11 item 6): the batched state writer, the per-record
 * serializer (`RunContext.serialized`), the request pool, and the order of checkpoints and state writes. Real
 * Redis (its own server), the simulator over HTTP, a memory platform; nothing of ours is mocked. Where a test
 * must see that something has NOT happened yet, it holds the other side still (a gate, or Redis paused for
 * writes) and waits for an observable point, never for time.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pool } from '../../jobs/sync/pool.js';
import { ANSWERED, FAILED } from '../../src/collections/slots.js';
import type { RunContext, SyncSettings } from '../../jobs/sync/context.js';
import { runSync } from '../../jobs/sync/pipeline.js';
import { StateWriter } from '../../jobs/sync/state-writer.js';
import type { Entity } from '../../src/glossary.js';
import { decodeMemoryToken } from '../../src/platforms/memory/index.js';
import { compareCursor } from '../../src/platforms/types.js';
import { createStateStores, type StateStores } from '../../src/state/index.js';
import { watchCommands, type CommandCounter } from '../state/commands.js';
import { testPrefix, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { runContextOf } from '../helpers/run-context.js';

/** A promise and its resolver: a task held until the test lets it go. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

/** Lets every callback already queued run (a few turns of the event loop), so what could start has started. */
async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i += 1) await new Promise((r) => setImmediate(r));
}

/** Whether a promise has settled yet, without waiting for it. */
function tracked<T>(p: Promise<T>): { promise: Promise<T>; done: () => boolean } {
  let done = false;
  const promise = p.finally(() => (done = true));
  promise.catch(() => undefined);
  return { promise, done: () => done };
}

const uuid = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

describe('the state writer', () => {
  const server = useTestRedis();
  let redis: Redis;
  let admin: Redis;
  let counter: CommandCounter;
  let stores: StateStores;

  beforeAll(async () => {
    redis = new Redis(server.url);
    admin = new Redis(server.url);
    counter = await watchCommands(server.url, redis);
    stores = createStateStores(redis, testPrefix());
    // Load both scripts (a server meets a script first through EVALSHA -> NOSCRIPT -> EVAL).
    await stores.records.setMany('warm', 'contacts', [{ id: 'x', uuid: uuid(0) }]);
    await stores.records.setMany('warm', 'contacts', [{ id: 'x', uuid: uuid(0) }], { endIntents: ['x'] });
  });
  afterAll(async () => {
    await admin.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    await counter?.close();
    redis?.disconnect();
    admin?.disconnect();
  });

  it('writes what is set in one turn in one round trip per entity when no request is in flight', async () => {
    const writer = new StateWriter(stores.records, 'acme', { maxBatch: 100, maxDelayMs: 60_000, inFlight: () => 0 });
    const commands = await counter.during(async () => {
      const sets: Promise<void>[] = [];
      for (let i = 0; i < 5; i += 1) sets.push(writer.set('contacts', { id: `c${i}`, uuid: uuid(i), hash: `h${i}` }));
      for (let i = 0; i < 3; i += 1) sets.push(writer.set('invoices', { id: `i${i}`, uuid: uuid(10 + i), hash: `h${i}` }));
      await Promise.all(sets);
    });
    expect(commands).toEqual([expect.stringMatching(/^EVALSHA /), expect.stringMatching(/^EVALSHA /)]);
    expect((await stores.records.getMany('acme', 'contacts', ['c0', 'c4'])).get('c4')).toEqual({ uuid: uuid(4), hash: 'h4' });
    expect(await stores.records.count('acme', 'invoices')).toBe(3);
  });

  it('while requests are in flight, writes a batch when it holds maxBatch entries, the rest after the delay', async () => {
    const writer = new StateWriter(stores.records, 'batches', { maxBatch: 3, maxDelayMs: 5, inFlight: () => 1 });
    const commands = await counter.during(async () => {
      await Promise.all(Array.from({ length: 7 }, (_, i) => writer.set('payments', { id: `p${i}`, uuid: uuid(i) })));
    });
    expect(commands).toHaveLength(3); // 3 + 3 + 1
    expect(await stores.records.count('batches', 'payments')).toBe(7);
  });

  it('resolves a set only once its batch is in Redis, and ends an intent in the same write as its id-map entry', async () => {
    const writer = new StateWriter(stores.records, 'paused', { maxBatch: 100, maxDelayMs: 60_000, inFlight: () => 0 });
    await stores.intents.begin('paused', 'c1', { name: 'Al Noor', at: 1, runId: 'r1' });
    const id = Number(await redis.call('CLIENT', 'ID'));
    await admin.call('CLIENT', 'PAUSE', '600000', 'WRITE');
    const set = tracked(writer.set('contacts', { id: 'c1', uuid: uuid(1), hash: 'h' }, { endIntent: true }));
    // Observable point: the writer's script has reached Redis and is held there by the pause.
    for (;;) {
      const mine = String(await admin.call('CLIENT', 'LIST', 'ID', String(id)));
      if (/ flags=\S*b/.test(mine) && / cmd=evalsha/.test(mine)) break;
      await settle(1);
    }
    await settle();
    expect(set.done()).toBe(false);
    expect(await admin.hget(stores.records.key('paused', 'contacts'), 'c1')).toBeNull();
    expect(await admin.hexists(stores.intents.key('paused'), 'c1')).toBe(1);
    await admin.call('CLIENT', 'UNPAUSE');
    await set.promise;
    expect(await stores.records.get('paused', 'contacts', 'c1')).toEqual({ uuid: uuid(1), hash: 'h' });
    expect(await admin.hexists(stores.intents.key('paused'), 'c1')).toBe(0);
  });

  it('rejects every set of a batch whose write fails, and the next batch is written', async () => {
    const writer = new StateWriter(stores.records, 'broken', { maxBatch: 100, maxDelayMs: 60_000, inFlight: () => 0 });
    await admin.set(stores.records.key('broken', 'contacts'), 'not a hash');
    const sets = [writer.set('contacts', { id: 'a', uuid: uuid(1) }), writer.set('contacts', { id: 'b', uuid: uuid(2) })];
    for (const s of sets) await expect(s).rejects.toThrow(/WRONGTYPE/);
    await admin.del(stores.records.key('broken', 'contacts'));
    await writer.set('contacts', { id: 'c', uuid: uuid(3) });
    expect(await stores.records.count('broken', 'contacts')).toBe(1);
  });
});

describe('a run: serialized, the request pool, checkpoints', () => {
  const server = useTestRedis();
  let rig: Rig;
  let n = 0;

  const settings: SyncSettings = { pageSize: 5, lookbackMs: 0, pendingMaxWaitMs: 60_000, ambiguousRecheckMs: 10 };

  /** A run context of tenant acme, as the sync processor builds one. */
  function runContext(pool: Pool, signal = new AbortController().signal): RunContext {
    n += 1;
    return runContextOf(rig, 'acme', { runId: `run-${n}`, pool, settings, stop: signal });
  }

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: server.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }],
      simulator: { faults: { latencyMs: 5 } },
      // Tokens come through the refresh queue; the sync itself is driven by the tests, not by a worker.
      worker: { queues: ['refreshToken'] },
    });
  });
  afterAll(async () => {
    await rig?.close();
  });

  describe('RunContext.serialized', () => {
    it('runs a second task of the same record only after the first ended, and tells it the state may be stale', async () => {
      const ctx = runContext(new Pool(4));
      const first = gate();
      const events: string[] = [];
      const a = ctx.serialized('contacts', 'c1', ctx.snapshot(), async (waited) => {
        events.push(`a start waited=${waited}`);
        await first.wait;
        events.push('a end');
      });
      const b = ctx.serialized('contacts', 'c1', ctx.snapshot(), async (waited) => {
        events.push(`b start waited=${waited}`);
      });
      await settle();
      expect(events).toEqual(['a start waited=false']);
      first.open();
      await Promise.all([a, b]);
      expect(events).toEqual(['a start waited=false', 'a end', 'b start waited=true']);
    });

    it('runs tasks of different records (or of the same id in another entity) at once', async () => {
      const ctx = runContext(new Pool(4));
      const held = gate();
      let heldStarted = false;
      const a = ctx.serialized('contacts', 'c1', ctx.snapshot(), async () => {
        heldStarted = true;
        await held.wait;
      });
      // Both finish while c1's task is still held: nothing waits for it.
      await ctx.serialized('contacts', 'c2', ctx.snapshot(), async () => undefined);
      await ctx.serialized('invoices', 'c1', ctx.snapshot(), async () => undefined);
      expect(heldStarted).toBe(true);
      held.open();
      await a;
    });

    it('tells a task whose snapshot predates the end of an earlier task of its record; a later snapshot is fresh', async () => {
      const ctx = runContext(new Pool(4));
      const early = ctx.snapshot();
      await ctx.serialized('payments', 'p1', ctx.snapshot(), async () => undefined);
      expect(await ctx.serialized('payments', 'p1', ctx.snapshot(), async (waited) => waited)).toBe(false);
      expect(await ctx.serialized('payments', 'p1', early, async (waited) => waited)).toBe(true);
    });

    it('passes a failed task its error, and the next task of the record still runs', async () => {
      const ctx = runContext(new Pool(4));
      const failing = ctx.serialized('contacts', 'c9', ctx.snapshot(), async () => {
        await settle(1);
        throw new Error('push failed');
      });
      const next = ctx.serialized('contacts', 'c9', ctx.snapshot(), async (waited) => `ran, waited=${waited}`);
      await expect(failing).rejects.toThrow('push failed');
      expect(await next).toBe('ran, waited=true');
    });
  });

  describe('the request pool', () => {
    /** A task in one slot of `pool` (as the client holds one for a send). */
    async function inSlot<T>(pool: Pool, task: () => Promise<T>): Promise<T> {
      const ticket = await pool.take(undefined, false);
      try {
        return await task();
      } finally {
        pool.give(ticket, ANSWERED);
      }
    }

    it('starts at most `limit` tasks at once, and the next one as soon as a slot frees', async () => {
      const pool = new Pool(3);
      const gates = Array.from({ length: 7 }, () => gate());
      let active = 0;
      let peak = 0;
      const started: number[] = [];
      const runs = gates.map((g, i) =>
        inSlot(pool, async () => {
          active += 1;
          peak = Math.max(peak, active);
          started.push(i);
          await g.wait;
          active -= 1;
          return i;
        }),
      );
      await settle();
      expect(started).toEqual([0, 1, 2]);
      expect(pool.running).toBe(3);
      gates[1]?.open();
      await runs[1];
      await settle();
      expect(started).toEqual([0, 1, 2, 3]);
      for (const g of gates) g.open();
      expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(peak).toBe(3);
      expect(pool.running).toBe(0);
    });

    it('lets a failed attempt back in first, and rejects a waiting take when its signal aborts', async () => {
      const pool = new Pool(1);
      const first = await pool.take(undefined, false);
      const order: string[] = [];
      const fresh = pool.take(undefined, false).then((t) => (order.push('fresh'), t));
      const again = pool.take(undefined, true).then((t) => (order.push('again'), t));
      const stop = new AbortController();
      const stopped = pool.take(stop.signal, false);
      stop.abort(new Error('run stopped'));
      await expect(stopped).rejects.toThrow('run stopped');
      pool.give(first, FAILED);
      pool.give(await again, ANSWERED);
      pool.give(await fresh, ANSWERED);
      expect(order).toEqual(['again', 'fresh']);
      expect(pool.running).toBe(0);
    });

    it("bounds a run's requests to the service: no more than the pool's limit reach the simulator at once", async () => {
      const platform = rig.memory.get('acme');
      platform.upsertMany(
        'contacts',
        Array.from({ length: 24 }, (_, i) => ({ id: `P${String(i).padStart(2, '0')}`, updatedAt: '2026-11-01T00:00:00.000Z', name: `Pool Contact ${i}` })),
      );
      const ctx = runContext(new Pool(2));
      await runSync(ctx);
      expect(ctx.counts['contacts.created']).toBe(24);
      expect(rig.sim.counters().maxConcurrencyByClient['client-acme']).toBeLessThanOrEqual(2);
    });
  });

  describe('checkpoint ordering', () => {
    it('a checkpoint never covers a record whose state is not yet written', async () => {
      const platform = rig.memory.get('acme');
      const records = Array.from({ length: 40 }, (_, i) => ({
        id: `K${String(i).padStart(2, '0')}`,
        updatedAt: `2026-11-02T00:00:${String(i).padStart(2, '0')}.000Z`,
        name: `Checkpoint Contact ${i}`,
      }));
      platform.upsertMany('contacts', records);
      const { cursors, records: states } = rig.app.stores;
      const uncovered: string[] = [];
      let checkpoints = 0;
      const ctx = runContext(new Pool(8));
      await runSync(ctx, {
        onProgress: async ({ entity }) => {
          if (entity !== 'contacts') return;
          const cp = await cursors.getCheckpoint('acme');
          if (cp?.runId !== ctx.runId || cp.data.entity !== 'contacts' || cp.data.pageToken === undefined) return;
          checkpoints += 1;
          const upTo = decodeMemoryToken(cp.data.pageToken);
          const covered = records.filter((r) => compareCursor({ updatedAt: r.updatedAt, id: r.id }, upTo) <= 0).map((r) => r.id);
          const known = await states.getMany('acme', 'contacts' satisfies Entity, covered);
          uncovered.push(...covered.filter((id) => known.get(id)?.uuid === undefined));
        },
      });
      expect(checkpoints).toBeGreaterThan(3);
      expect(uncovered).toEqual([]);
    });
  });
});
