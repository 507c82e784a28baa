/**
 * The stall watchdog (issue 35): a run that makes no progress for RUN_STALL_S, whatever it waits on, ends its
 * attempt saying where it waits (error log, metric, the run's record), and the job is retried and resumed from its
 * checkpoint. The wait that never ends is a platform that takes a page request and never answers (the memory
 * platform's `holdNext`: no timeout of ours covers it). While the run is quiet, its record says since when and on
 * what it waits, as `status` shows it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestSync } from '../../src/queues/index.js';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import { waitForRun, type RunRecord } from '../../src/state/index.js';
import { runCli } from '../helpers/cli-child.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The run's record once it says where the run waits (written after a quarter of RUN_STALL_S, at most a minute, of quiet). */
async function quietRecord(rig: Rig, runId: string): Promise<RunRecord> {
  for (let i = 0; i < 2_400; i += 1) {
    const run = await rig.app.stores.runs.get('stuck', runId);
    if (run?.waiting) return run;
    await sleep(25);
  }
  throw new Error(`the run's record never said where it waits: ${JSON.stringify(await rig.app.stores.runs.get('stuck', runId))}`);
}

/** A memory platform whose `n`th read of `entity` is held (taken and never answered) until released. */
function holdRead(rig: Rig, entity: 'contacts', n: number): { release: () => void } {
  const store = rig.memory.get('stuck');
  const held: { release: () => void }[] = [];
  let reads = 0;
  const take = store.takeHold.bind(store);
  store.takeHold = (e) => {
    if (e === entity && ++reads === n) held.push(store.holdNext(entity));
    return take(e);
  };
  return { release: () => held.forEach((h) => h.release()) };
}

function fill(rig: Rig, data: SampleData): void {
  const store = rig.memory.get('stuck');
  store.upsertMany('contacts', data.contacts);
  store.upsertMany('invoices', data.invoices);
  store.upsertMany('payments', data.payments);
}

describe('a run that waits for something that never comes', () => {
  const server = useTestRedis();
  let rig: Rig;
  const data = sampleData({ contacts: 30, seed: 35, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });

  beforeAll(async () => {
    rig = await startRig({
      redisUrl: server.url,
      tenants: [{ id: 'stuck', platform: { kind: 'memory', name: 'stuck' } }],
      // Ticks every 400 ms; quiet for a quarter of the bound (1 s), the run's record says where it waits.
      env: { RUN_STALL_S: '4', SYNC_PAGE_SIZE: '10', SYNC_CONCURRENCY: '4' },
      logLevel: 'info',
    });
    fill(rig, data);
  });
  afterAll(async () => {
    await rig?.close();
  });

  it('ends the attempt naming the wait, counts it, and the retried attempt resumes from the checkpoint and finishes', async () => {
    // The third contact page is asked for and never answered (one read; the next attempt reads it as usual).
    const held = holdRead(rig, 'contacts', 3);
    const { requestedAt, jobId } = await requestSync(rig.app.queues.sync, 'stuck', 'full', { trigger: 'test' });
    const runId = `run-${jobId}`;
    try {
      // Quiet for over a second: the record says since when, and on what it waits.
      const quiet = await quietRecord(rig, runId);
      expect(quiet.outcome).toBeUndefined();
      expect(quiet.progressAt).toBeGreaterThan(requestedAt);
      expect(quiet.waiting).toMatch(/^platform 1 \(\d+ s\)/);

      const run = await waitForRun(rig.app.stores.runs, 'stuck', { mode: 'full', requestedAt, timeoutMs: 60_000 });
      expect(run.outcome, JSON.stringify(run.errors)).toBe('succeeded');
      expect(run.stalls).toMatchObject({ count: 1 });
      expect(run.stalls?.reason).toMatch(/^stalled: no progress for \d+ s in contacts; waiting on platform 1/);
      expect(run.errors.some((e) => e.startsWith('an earlier attempt stalled (1 in all') && e.includes('waiting on platform 1'))).toBe(true);
      expect(run.waiting, 'a finished run waits on nothing').toBeUndefined();

      const lines = rig.logs.join('').split('\n').filter((l) => l.includes('"sync run stalled'));
      expect(lines, 'one error line where it waits').toHaveLength(1);
      const line = JSON.parse(lines[0]!) as { level: number; phase: string; waits: { kind: string; count: number }[]; pool: { held: { token: number; sent: number } } };
      expect(line.level).toBe(50);
      expect(line.phase).toBe('contacts');
      expect(line.waits[0]).toMatchObject({ kind: 'platform', count: 1 });
      expect(line.pool.held).toEqual({ token: 0, sent: 0, oldestMs: 0 });
      const resumed = rig.logs.join('').split('\n').filter((l) => l.includes('"sync run started"') && l.includes(runId));
      expect(resumed.map((l) => (JSON.parse(l) as { resumed: boolean }).resumed), 'the second attempt resumed from the checkpoint').toEqual([false, true]);

      const metrics = await rig.metrics.registry.getSingleMetricAsString('collections_sync_run_stalls_total');
      expect(metrics).toContain('collections_sync_run_stalls_total{tenant="stuck"} 1');
      const job = await rig.app.queues.sync.getJob(jobId ?? '');
      expect(job?.attemptsStarted, 'the stall used an attempt').toBe(2);
      expect(job?.failedReason).toMatch(/^stalled: no progress/);
      // Every record landed once, in spite of the attempt that was cut short.
      const stored = rig.sim.data('client-stuck');
      expect(stored.contacts.map((c) => c.extPlatformId).sort()).toEqual(data.contacts.map((c) => c.id).sort());
    } finally {
      held.release();
    }
  }, 90_000);
});

describe('a run quiet for a while, under the bound', () => {
  const server = useTestRedis();
  let rig: Rig;
  let folder: string;
  const data = sampleData({ contacts: 12, seed: 36, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });

  beforeAll(async () => {
    // Quiet for 7.5 s (a quarter of the bound), the record says where it waits; a stall would take 30 s.
    rig = await startRig({ redisUrl: server.url, tenants: [{ id: 'stuck', platform: { kind: 'memory', name: 'stuck' } }], env: { RUN_STALL_S: '30', SYNC_PAGE_SIZE: '5' } });
    fill(rig, data);
    folder = await mkdtemp(join(tmpdir(), 'cs-stall-'));
  });
  afterAll(async () => {
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  it('shows in status as running with its last progress and what it waits on, then finishes without a stall', async () => {
    const held = holdRead(rig, 'contacts', 2);
    const { requestedAt, jobId } = await requestSync(rig.app.queues.sync, 'stuck', 'full', { trigger: 'test' });
    const runId = `run-${jobId}`;
    try {
      const quiet = await quietRecord(rig, runId);
      expect(quiet.waiting).toMatch(/^platform 1 \(\d+ s\)/);
      // status reads the tenants file for the tenant's name and platform; the run history is in Redis.
      const tenants = join(folder, 'tenants.json');
      await writeFile(tenants, JSON.stringify({ tenants: [{ id: 'stuck', collections: { clientId: 'client-stuck', clientSecret: 'secret-stuck-x9' }, platform: { kind: 'file', path: folder } }] }));
      const status = await runCli(['status', '--tenant', 'stuck'], rig.cliEnv(tenants)).done;
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toMatch(new RegExp(`run ${runId} full running \\(contacts\\), last progress \\d+ s ago \\(`));
      expect(status.stdout).toMatch(/\n {4}waiting on: platform 1 \(\d+ s\)/);
      expect(status.stdout).not.toContain('stalled');
    } finally {
      held.release();
    }
    const run = await waitForRun(rig.app.stores.runs, 'stuck', { mode: 'full', requestedAt, timeoutMs: 60_000 });
    expect(run.outcome).toBe('succeeded');
    expect(run.stalls).toBeUndefined();
    expect(run.counts['contacts.created']).toBe(data.contacts.length);
  }, 90_000);
});
