/**
 * A flaky service costs little (issue 28): a request waiting out its back-off after a transient fault holds no slot
 * of the run's request pool, so the pool's other requests are served meanwhile; and a burst of 429s still slows the
 * tenant down as one (the pool lets fewer requests out at once, and pauses for Retry-After). Observed at the
 * simulator: the order in which the service created the contacts, and the most requests in flight. Faults are
 * scripted (deterministic); no assertion is about time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunContext, SyncSettings } from '../../jobs/sync/context.js';
import { runSync } from '../../jobs/sync/pipeline.js';
import { Pool } from '../../jobs/sync/pool.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { runContextOf } from '../helpers/run-context.js';

const settings: SyncSettings = { pageSize: 5, lookbackMs: 0, pendingMaxWaitMs: 60_000, ambiguousRecheckMs: 10 };

describe('a flaky service and the run’s request pool', () => {
  let server: TestRedis;
  let rig: Rig;
  let n = 0;

  /** A run context of `tenant`, as the sync processor builds one, with a pool of `limit`. */
  function runContext(tenant: string, limit: number): RunContext {
    n += 1;
    return runContextOf(rig, tenant, { runId: `run-${n}`, pool: new Pool(limit), settings });
  }

  /** `count` contacts of `tenant`'s platform; the first (`${prefix}00`) comes first in the listing. */
  function contacts(tenant: string, prefix: string, count: number): string[] {
    const ids = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`);
    rig.memory.get(tenant).upsertMany(
      'contacts',
      ids.map((id, i) => ({ id, updatedAt: `2026-11-01T00:00:${String(i).padStart(2, '0')}.000Z`, name: `Flaky Contact ${id}` })),
    );
    return ids;
  }

  beforeAll(async () => {
    server = await startTestRedis();
    rig = await startRig({
      redisUrl: server.url,
      tenants: ['backoff', 'burst'].map((id) => ({ id, platform: { kind: 'memory', name: id } })),
      simulator: { faults: { latencyMs: 5 } },
      // Tokens come through the refresh queue; the runs are driven by the tests, not by a worker.
      worker: { queues: ['refreshToken'] },
      logLevel: 'warn',
    });
  });
  afterAll(async () => {
    await rig?.close();
    await server?.stop();
  });

  it('serves the pool’s other requests while one waits out its back-off (a pool of one)', async () => {
    const ids = contacts('backoff', 'B', 6);
    const first = ids[0]!;
    // The first contact's create is answered 503 twice (before processing): it waits out two back-offs, then lands.
    rig.sim.setFaults({ script: [{ route: 'POST /contact', fault: '503', count: 2, matching: `"extPlatformId":"${first}"` }] });
    const ctx = runContext('backoff', 1);
    await runSync(ctx);
    rig.sim.setFaults({ script: [] });
    expect(ctx.counts['contacts.created']).toBe(6);
    expect(rig.sim.counters().faultsInjected['503']).toBe(2);
    const order = rig.sim.data('client-backoff').contacts.map((c) => c.extPlatformId);
    expect(new Set(order)).toEqual(new Set(ids));
    // Its request was first in the pool's queue. Had it held the pool's one slot through its back-offs, it would be
    // the service's first contact; the others were created while it waited.
    expect(order.indexOf(first)).toBeGreaterThan(0);
  });

  it('lets fewer requests out at once after a burst of 429s (a whole round refused)', async () => {
    const ids = contacts('burst', 'R', 16);
    const limit = 8;
    // The first `limit` creates (one round of the pool) are answered 429 with Retry-After: 1.
    rig.sim.setFaults({ script: [{ route: 'POST /contact', fault: '429', count: limit, retryAfterS: 1 }] });
    const ctx = runContext('burst', limit);
    const run = runSync(ctx);
    // The burst is answered (8 of the last 32 answers: a quarter, the pool halves; not most of them, so no pause): the
    // refused creates wait out their Retry-After (1 s) while the others go, and the most in flight from here on is
    // what the pool lets out after the burst.
    for (;;) {
      const c = rig.sim.counters();
      if ((c.faultsInjected['429'] ?? 0) >= limit) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    rig.sim.resetCounters();
    await run;
    rig.sim.setFaults({ script: [] });
    expect(ctx.counts['contacts.created']).toBe(16);
    expect(new Set(rig.sim.data('client-burst').contacts.map((c) => c.extPlatformId))).toEqual(new Set(ids));
    // One round of 429s halves the pool: 4 at first, then +1 per round of answers, so up to 7 by the last of the 16
    // (how many rounds pass before the retried creates come back depends on the machine's speed); never the 8 it
    // let out before the burst.
    const after = rig.sim.counters().maxConcurrencyByClient['client-burst'] ?? 0;
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThan(limit);
  });
});
