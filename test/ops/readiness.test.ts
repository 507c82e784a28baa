import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useSpawnedRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

interface ReadyBody {
  ready: boolean;
  checks: Record<string, { ok: boolean; detail?: string }>;
}

/** Polls /readyz until `want` (bounded by attempts, not by a timed assertion). */
async function pollReady(base: string, want: number, attempts = 150): Promise<{ status: number; body: ReadyBody }> {
  let last: { status: number; body: ReadyBody } | undefined;
  for (let i = 0; i < attempts; i += 1) {
    const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5_000) });
    last = { status: res.status, body: (await res.json()) as ReadyBody };
    if (last.status === want) return last;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`/readyz never answered ${want}; last: ${JSON.stringify(last)}`);
}

describe('readiness follows Redis', () => {
  const redis = useSpawnedRedis();
  let rig: Rig;
  let base: string;

  beforeAll(async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], worker: { opsPort: 'random' } });
    rig.memory.get('acme').upsert('contacts', { id: 'C1', updatedAt: '2026-11-01T00:00:00.000Z', name: 'Al Noor Trading', nameAr: 'النور للتجارة' });
    base = `http://127.0.0.1:${rig.worker?.ops?.port ?? 0}`;
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('answers 503 while Redis is down, 200 once it is back, and the workers complete jobs again', async () => {
    const first = await rig.sync('acme');
    expect(first.outcome).toBe('succeeded');
    expect((await pollReady(base, 200, 1)).body.ready).toBe(true);

    await redis.kill();
    const killedAt = Date.now();
    const down = await pollReady(base, 503);
    expect(down.body.ready).toBe(false);
    expect(down.body.checks['redis']?.ok).toBe(false);
    // Liveness is not readiness: the process is still up.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    // Stay down longer than BullMQ's drainDelay (5 s): the outage length after which workers went silent (bullmq #4585).
    await new Promise((r) => setTimeout(r, Math.max(0, 6_500 - (Date.now() - killedAt))));
    await redis.start();
    const up = await pollReady(base, 200);
    expect(up.body.checks['redis']?.ok).toBe(true);
    expect(up.body.checks['workers']?.ok).toBe(true);

    // Not wedged: a run requested after the outage is taken and finished by the same workers.
    rig.memory.get('acme').upsert('contacts', { id: 'C2', updatedAt: '2026-11-02T00:00:00.000Z', name: 'Najd Logistics', nameAr: 'نجد للخدمات اللوجستية' });
    const after = await rig.sync('acme');
    expect(after.outcome).toBe('succeeded');
    expect(after.counts['contacts.created']).toBe(1);
    expect(rig.sim.data('client-acme').contacts.map((c) => c.extPlatformId).sort()).toEqual(['C1', 'C2']);
  });
});
