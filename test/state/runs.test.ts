import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { COMPACT_ERROR_MAX_CHARS, RUN_ERRORS_KEPT, RUN_ERROR_MAX_CHARS, RUN_UNLINKED_KEPT, RUNS_DETAILED, RUNS_KEPT, RunStore } from '../../src/state/runs.js';
import { StateCorruptError } from '../../src/state/stored.js';
import { testPrefix, useRedisClient } from '../helpers/redis.js';
import { keyBase } from '../../src/redis/keys.js';

describe('RunStore', () => {
  let redis!: Redis;
  useRedisClient((client) => (redis = client));

  it('records a run from start to finish', async () => {
    const s = new RunStore(redis, testPrefix());
    await s.start('acme', { runId: 'run-1', mode: 'incremental', startedAt: 1_000, trigger: 'schedule' });
    expect(await s.update('acme', 'run-1', { counts: { created: 2 }, phase: 'contacts', progress: { pages: 1, entity: 'contacts' } })).toBe(true);
    expect(await s.increment('acme', 'run-1', { created: 3, 'invoices.skipped': 7, requests: 1 })).toBe(true);
    expect(await s.increment('acme', 'run-1', { requests: 4 })).toBe(true);
    let run = await s.get('acme', 'run-1');
    expect(run).toMatchObject({ runId: 'run-1', mode: 'incremental', startedAt: 1_000, trigger: 'schedule', phase: 'contacts', progress: { pages: 1, entity: 'contacts' } });
    expect(run?.counts).toEqual({ created: 5, 'invoices.skipped': 7, requests: 5 });
    expect(run?.outcome).toBeUndefined();
    expect(
      await s.finish('acme', 'run-1', { outcome: 'partial', finishedAt: 2_000, counts: { created: 6, deadLettered: 1 }, errors: ['invoices i9: rejected'], unlinkedPayments: ['p7'] }),
    ).toBe(true);
    run = await s.get('acme', 'run-1');
    expect(run).toMatchObject({ outcome: 'partial', finishedAt: 2_000, errors: ['invoices i9: rejected'], errorsOmitted: 0, unlinkedPayments: ['p7'] });
    expect(run?.counts).toEqual({ created: 6, deadLettered: 1, 'invoices.skipped': 7, requests: 5 });
    expect(await s.last('acme')).toEqual(run);
    expect(await s.get('acme', 'nope')).toBeUndefined();
    expect(await s.last('beta')).toBeUndefined();
  });

  it('never resurrects an unknown run', async () => {
    const prefix = testPrefix();
    const s = new RunStore(redis, prefix);
    expect(await s.update('acme', 'ghost', { phase: 'x' })).toBe(false);
    expect(await s.increment('acme', 'ghost', { created: 1 })).toBe(false);
    expect(await s.finish('acme', 'ghost', { outcome: 'failed', finishedAt: 1, counts: {}, errors: [] })).toBe(false);
    expect(await redis.exists(s.runKey('acme', 'ghost'))).toBe(0);
    await expect(s.increment('acme', 'ghost', { created: 1.5 })).rejects.toThrow();
  });

  it('keeps the last RUNS_KEPT runs per tenant, newest first, and deletes the rest', async () => {
    const s = new RunStore(redis, testPrefix());
    for (let i = 0; i < RUNS_KEPT + 5; i += 1) {
      await s.start('acme', { runId: `run-${i}`, mode: i % 2 ? 'full' : 'incremental', startedAt: 10_000 + i, trigger: 'cli' });
    }
    await s.start('beta', { runId: 'run-b', mode: 'reconcile', startedAt: 1, trigger: 'cli' });
    const recent = await s.recent('acme', 1_000);
    expect(recent).toHaveLength(RUNS_KEPT);
    expect(recent[0]?.runId).toBe(`run-${RUNS_KEPT + 4}`);
    expect(recent.at(-1)?.runId).toBe('run-5');
    expect(await s.get('acme', 'run-4')).toBeUndefined();
    expect(await redis.exists(s.runKey('acme', 'run-0'))).toBe(0);
    expect((await s.recent('acme', 3)).map((r) => r.runId)).toEqual([`run-${RUNS_KEPT + 4}`, `run-${RUNS_KEPT + 3}`, `run-${RUNS_KEPT + 2}`]);
    expect((await s.recent('beta')).map((r) => r.runId)).toEqual(['run-b']);
  });

  it('keeps the newest RUNS_DETAILED runs in full and older ones as compact lines: 150 more runs after the 20th add at most 16 KB', async () => {
    const s = new RunStore(redis, testPrefix());
    const bytes = async (): Promise<number> => {
      let sum = 0;
      for (const k of await s.keysOf('acme')) sum += Number((await redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')) ?? 0);
      return sum;
    };
    // Runs as a sync writes them: counts, progress, a hundred long errors, a thousand unlinked payments.
    const run = async (i: number): Promise<void> => {
      const runId = `run-sync-acme-incremental-${1_764_000_000_000 + i}`;
      await s.start('acme', { runId, mode: 'incremental', startedAt: 1_764_000_000_000 + i * 60_000, trigger: 'schedule', requestedAt: 1_764_000_000_000 + i * 60_000 }, RUNS_KEPT, { detailed: RUNS_DETAILED });
      await s.update('acme', runId, { phase: 'payments', progress: { entity: 'payments', pages: 3 }, progressAt: 1 });
      const counts = { 'contacts.created': 4, 'contacts.unchanged': 13, 'invoices.updated': 2, 'invoices.unchanged': 30, 'payments.skipped': 0, requests: 41 };
      await s.finish('acme', runId, { outcome: 'partial', finishedAt: 1_764_000_000_000 + i * 60_000 + 900, counts, errors: Array.from({ length: 150 }, (_, e) => `invoices INV-${e}: rejected: ${'x'.repeat(400)}`), unlinkedPayments: Array.from({ length: 1_200 }, (_, p) => `pay-${p}`) });
    };
    for (let i = 0; i < 20; i += 1) await run(i);
    const after20 = await bytes();
    for (let i = 20; i < 170; i += 1) await run(i);
    const after170 = await bytes();
    expect(after170 - after20).toBeLessThanOrEqual(16 * 1024);
    expect(await redis.zcard(s.indexKey('acme'))).toBe(RUNS_DETAILED);
    expect(await redis.llen(s.compactKey('acme'))).toBe(RUNS_KEPT - RUNS_DETAILED);
    const recent = await s.recent('acme', 1_000);
    expect(recent).toHaveLength(RUNS_KEPT);
    expect(recent.map((r) => r.startedAt)).toEqual([...recent.map((r) => r.startedAt)].sort((a, b) => b - a));
    // The newest in full; an older one keeps its mode, times, outcome, counts not zero and first error (cut).
    expect(recent[0]?.errors).toHaveLength(RUN_ERRORS_KEPT);
    expect(recent[0]?.unlinkedPayments).toHaveLength(RUN_UNLINKED_KEPT);
    const old = recent[RUNS_DETAILED];
    expect(old).toMatchObject({ runId: 'run-sync-acme-incremental-1764000000164', mode: 'incremental', trigger: 'schedule', outcome: 'partial', errorsOmitted: 149, unlinkedPayments: [], unlinkedOmitted: 1_200 });
    expect(old?.counts).toEqual({ 'contacts.created': 4, 'contacts.unchanged': 13, 'invoices.updated': 2, 'invoices.unchanged': 30, requests: 41 });
    expect(old?.errors).toEqual([`invoices INV-0: rejected: ${'x'.repeat(400)}`.slice(0, COMPACT_ERROR_MAX_CHARS)]);
    expect(old?.finishedAt).toBe(1_764_000_000_000 + 164 * 60_000 + 900);
    expect(await s.get('acme', 'run-sync-acme-incremental-1764000000164')).toEqual(old);
  });

  it('drops compact lines older than the age limit', async () => {
    const s = new RunStore(redis, testPrefix());
    const day = 86_400_000;
    for (let i = 0; i < 12; i += 1) await s.start('acme', { runId: `run-${i}`, mode: 'incremental', startedAt: i * day, trigger: 'cli' }, RUNS_KEPT, { detailed: 2, maxAgeMs: 5 * day, now: 11 * day });
    expect((await s.recent('acme', 100)).map((r) => r.runId)).toEqual(['run-11', 'run-10', 'run-9', 'run-8', 'run-7', 'run-6']);
  });

  it('caps errors and unlinked payments, counting what it left out', async () => {
    const s = new RunStore(redis, testPrefix());
    await s.start('acme', { runId: 'r', mode: 'full', startedAt: 1, trigger: 'cli', requestedAt: 0 });
    const errors = Array.from({ length: RUN_ERRORS_KEPT + 20 }, (_, i) => `${i}:${'e'.repeat(RUN_ERROR_MAX_CHARS + 50)}`);
    const unlinked = Array.from({ length: RUN_UNLINKED_KEPT + 3 }, (_, i) => `p${i}`);
    await s.finish('acme', 'r', { outcome: 'failed', finishedAt: 2, counts: {}, errors, unlinkedPayments: unlinked });
    const run = await s.get('acme', 'r');
    expect(run?.errors).toHaveLength(RUN_ERRORS_KEPT);
    expect(run?.errorsOmitted).toBe(20);
    expect(run?.errors[0]?.length).toBe(RUN_ERROR_MAX_CHARS + 3);
    expect(run?.unlinkedPayments).toHaveLength(RUN_UNLINKED_KEPT);
    expect(run?.unlinkedOmitted).toBe(3);
    expect(run?.requestedAt).toBe(0);
  });

  it('a run id seen again starts afresh', async () => {
    const s = new RunStore(redis, testPrefix());
    await s.start('acme', { runId: 'r', mode: 'full', startedAt: 1, trigger: 'cli' });
    await s.increment('acme', 'r', { created: 4 });
    await s.start('acme', { runId: 'r', mode: 'full', startedAt: 5, trigger: 'cli' });
    expect((await s.get('acme', 'r'))?.counts).toEqual({});
    expect(await s.recent('acme')).toHaveLength(1);
  });

  it('a corrupted value gives an error naming the key and field', async () => {
    const prefix = testPrefix();
    const s = new RunStore(redis, prefix);
    await s.start('acme', { runId: 'r', mode: 'full', startedAt: 1, trigger: 'cli' });
    await redis.hset(s.runKey('acme', 'r'), 'c:created', 'many');
    await expect(s.get('acme', 'r')).rejects.toBeInstanceOf(StateCorruptError);
    await expect(s.recent('acme')).rejects.toThrow(`${keyBase(prefix)}:runs:{acme}:run:r field "c:created"`);
    await redis.hdel(s.runKey('acme', 'r'), 'c:created');
    await redis.hset(s.runKey('acme', 'r'), 'meta', '{"runId":"r","mode":"sideways"}');
    await expect(s.get('acme', 'r')).rejects.toThrow(`${keyBase(prefix)}:runs:{acme}:run:r field "meta"`);
  });
});
