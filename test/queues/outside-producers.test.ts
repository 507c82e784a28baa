/**
 * Jobs added by code outside collections-sync (issue 28 item 4), with a plain BullMQ `Queue.add(name, data)` and
 * nothing but what `jobs contract --json` prints (queue, prefix, name), against a real worker and the simulator:
 * a good one runs and is recorded as asked; a wrong name, a `requestedAt` in seconds and a missing trigger fail
 * for good at once with a reason the producer can read; jobs added without options are trimmed by the worker's
 * bounds (decision 111); the printed deduplication rule is the one the CLI's own jobs use; and the documented Node
 * example ("Enqueueing from other code") runs as written.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Queue, type Job } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobContract, OutsideJob, OutsideQueue } from '../../src/queues/contract.js';
import { MemoryPlatformRegistry } from '../../src/platforms/memory/index.js';
import { requestSync } from '../../src/queues/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { printedContract } from '../helpers/contract.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

const DAY_MS = 86_400_000;

describe('jobs from outside producers', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let contract: JobContract;
  let sync: OutsideQueue;
  let syncRun: OutsideJob;
  /** The outside app's queue: plain BullMQ, built from the printed contract only. */
  let outside: Queue;

  beforeAll(async () => {
    const memory = new MemoryPlatformRegistry();
    const data = sampleData({ contacts: 5, seed: 28, today: new Date('2026-11-20T00:00:00Z') });
    const store = memory.get('acme');
    store.upsertMany('contacts', data.contacts);
    store.upsertMany('invoices', data.invoices);
    rig = await startRig({ redisUrl: redis.url, memory, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }] });
    contract = await printedContract(rig.env.KEY_PREFIX);
    sync = contract.queues.find((q) => q.queue === 'sync')!;
    syncRun = sync.jobs.find((j) => j.key === 'sync')!;
    outside = new Queue(sync.queue, { connection: { url: redis.url }, prefix: sync.prefix });
    outside.on('error', () => undefined);
  });
  afterAll(async () => {
    await outside?.close();
    await rig?.close();
    if (redis && rig) await dropPrefix(redis.url, rig.env.KEY_PREFIX);
  });

  /** The job once it has finished (completed or failed), read after its state is final. */
  async function finished(job: Job): Promise<Job> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const state = await outside.getJobState(job.id!);
      if (state === 'completed' || state === 'failed') return (await outside.getJob(job.id!))!;
      if (Date.now() > deadline) throw new Error(`job ${job.id ?? '?'} did not finish (state ${state})`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Moves a finished job's place in its completed or failed set back in time (as if it had finished then). */
  async function age(job: Job, set: 'completed' | 'failed', ms: number): Promise<void> {
    expect(await rig.app.redis.zadd(outside.toKey(set), 'XX', 'CH', Date.now() - ms, job.id!)).toBe(1);
  }

  const good = () => ({ tenantId: 'acme', mode: 'incremental', trigger: 'external', requestedAt: Date.now() });

  it('runs a job added with no options under the printed prefix, queue and name, and records it as asked', async () => {
    const data = good();
    const job = await finished(await outside.add(syncRun.name, data));
    expect(job.failedReason, job.failedReason).toBeUndefined();
    expect(await job.getState()).toBe('completed');
    const run = (await rig.app.stores.runs.recent('acme', 10)).find((r) => r.runId === `run-${job.id ?? ''}`);
    expect(run).toMatchObject({ mode: 'incremental', trigger: 'external', requestedAt: data.requestedAt, outcome: 'succeeded' });
  });

  it('fails a wrong job name, a requestedAt in seconds and a missing trigger for good, with a readable failedReason', async () => {
    const retried = { attempts: 5, backoff: { type: 'fixed', delay: 10 } };
    const cases = [
      { name: 'backfill', data: { ...good(), mode: 'full' }, reason: /the sync queue runs jobs named "sync-run", not "backfill"/ },
      { name: syncRun.name, data: { ...good(), requestedAt: Math.floor(Date.now() / 1000) }, reason: /invalid sync-run job data: requestedAt: must be epoch milliseconds, from 2000-01-01 .*a value in seconds is a thousand times too small/ },
      { name: syncRun.name, data: { tenantId: 'acme', mode: 'incremental', requestedAt: Date.now() }, reason: /invalid sync-run job data: trigger: required: who asked for the run \("external" for jobs your own code adds\)/ },
      // One rule with the API's (decision 0235): since bounds a full run only.
      { name: syncRun.name, data: { ...good(), since: '2026-01-01' }, reason: /invalid sync-run job data: since: since goes with mode full only/ },
    ];
    const before = (await rig.app.stores.runs.recent('acme', 100)).length;
    for (const c of cases) {
      const job = await finished(await outside.add(c.name, c.data, retried));
      expect(await job.getState(), c.name).toBe('failed');
      expect(job.failedReason).toMatch(c.reason);
      expect(job.attemptsMade, `${c.name}: never retried`).toBe(1);
    }
    // None of them started a run (no run recorded in 1970, none of a job that is no sync).
    expect((await rig.app.stores.runs.recent('acme', 100)).length).toBe(before);
  });

  it('trims jobs added without options by the worker\'s bounds: completed after 7 days, failed after 30', async () => {
    const oldDone = await finished(await outside.add(syncRun.name, good()));
    expect(await oldDone.getState()).toBe('completed');
    await age(oldDone, 'completed', 8 * DAY_MS);
    const oldFailed = await finished(await outside.add('backfill', good()));
    expect(await oldFailed.getState()).toBe('failed');
    await age(oldFailed, 'failed', 31 * DAY_MS);

    // The next job to finish in each set trims the ones older than the bound (BullMQ does it as a job finishes).
    const done = await finished(await outside.add(syncRun.name, good()));
    const failed = await finished(await outside.add('backfill', good()));
    expect(await done.getState()).toBe('completed');
    expect(await failed.getState()).toBe('failed');
    expect(await outside.getJob(oldDone.id!)).toBeUndefined();
    expect(await outside.getJob(oldFailed.id!)).toBeUndefined();
    // Within the bounds, they stay.
    expect(await outside.getJob(done.id!)).toBeDefined();
    expect(await outside.getJob(failed.id!)).toBeDefined();
    expect(syncRun.withoutOptions).toMatchObject({ removeOnComplete: { age: 7 * 86_400 }, removeOnFail: { age: 30 * 86_400 } });
  });

  it('the printed deduplication is the CLI\'s own: a CLI request for the same tenant, mode and since joins the outside job', async () => {
    // A queue with no worker, so both requests meet while the first still waits.
    const prefix = testPrefix('outside');
    const waiting = await printedContract(prefix);
    const q = waiting.queues.find((x) => x.queue === 'sync')!;
    const job = q.jobs.find((j) => j.key === 'sync')!;
    const queue = new Queue(q.queue, { connection: { url: redis.url }, prefix: q.prefix });
    try {
      const added = await queue.add(job.name, { ...(job.example as object), requestedAt: Date.now() }, job.options);
      expect(job.options.deduplication?.id).toBe(job.deduplication?.exampleId);
      const example = job.example as { tenantId: string; mode: 'full'; since: string };
      const viaCli = await requestSync(queue, example.tenantId, example.mode, { since: example.since, trigger: 'cli' });
      expect(viaCli.jobId).toBe(added.id);
      expect(await queue.count()).toBe(1);
    } finally {
      await queue.close();
      await dropPrefix(redis.url, prefix);
    }
  });

  it('the documented Node example (docs/outside-producers.md) runs as written (its prefix made this test\'s), and its job runs as an external one', async () => {
    const section = await readFile(fileURLToPath(new URL('../../docs/outside-producers.md', import.meta.url)), 'utf8');
    const example = /```js\n([\s\S]*?)```/.exec(section)?.[1];
    expect(example, 'a js block in "Enqueueing from other code"').toBeDefined();
    expect(example).toContain("prefix: 'cs:{sync}'");
    // Its options are the printed ones.
    const o = syncRun.options as { attempts: number; removeOnComplete: { count: number; age: number }; removeOnFail: { count: number; age: number } };
    expect(example).toContain(`attempts: ${o.attempts},`);
    expect(example).toContain(`removeOnComplete: { count: ${o.removeOnComplete.count}, age: ${o.removeOnComplete.age} }`);
    expect(example).toContain(`removeOnFail: { count: ${o.removeOnFail.count}, age: ${o.removeOnFail.age} }`);
    // Beside the project, so `bullmq` resolves from its node_modules as an app's would.
    const dir = fileURLToPath(new URL('../../.tmp/', import.meta.url));
    await mkdir(dir, { recursive: true });
    const file = `${dir}readme-example-${process.pid}.mjs`;
    await writeFile(file, example!.replace("prefix: 'cs:{sync}'", `prefix: ${JSON.stringify(sync.prefix)}`));
    try {
      const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [file], { env: { ...process.env, REDIS_URL: redis.url }, stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('exit', (code) => resolve({ code, stdout, stderr }));
      });
      expect(r.code, r.stderr).toBe(0);
      await ranAsExternal(r.stdout);
    } finally {
      await rm(file, { force: true });
    }
  });

  /** The example printed `queued <id>`: that job ran a full run recorded as an external one. */
  async function ranAsExternal(stdout: string): Promise<void> {
    const id = /^queued (\S+)$/m.exec(stdout)?.[1];
    expect(id, stdout).toBeDefined();
    const job = await finished((await outside.getJob(id!))!);
    expect(job.failedReason, job.failedReason).toBeUndefined();
    const run = (await rig.app.stores.runs.recent('acme', 20)).find((x) => x.runId === `run-${id!}`);
    expect(run).toMatchObject({ mode: 'full', trigger: 'external', outcome: 'succeeded' });
  }

  it('the documented Node setup runs as written in a fresh folder: its commands (npm init, npm install bullmq ioredis, node) and nothing of this project', async () => {
    const section = await readFile(fileURLToPath(new URL('../../docs/outside-producers.md', import.meta.url)), 'utf8');
    const commands = /```sh\n([\s\S]*?)```/.exec(section)?.[1]?.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
    const example = /```js\n([\s\S]*?)```/.exec(section)?.[1];
    expect(commands, 'a sh block before the js one').toBeDefined();
    expect(commands).toContain('npm install bullmq ioredis');
    // Outside the project: no node_modules above it to resolve bullmq or ioredis from.
    const dir = await mkdtemp(join(tmpdir(), 'cs-outside-'));
    await writeFile(join(dir, 'enqueue.mjs'), example!.replace("prefix: 'cs:{sync}'", `prefix: ${JSON.stringify(sync.prefix)}`));
    try {
      let last = { stdout: '', stderr: '' };
      for (const line of commands!) {
        // As written, but for the address of this test's Redis.
        last = await sh(line.replace('redis://localhost:6379', redis.url), dir);
      }
      await ranAsExternal(last.stdout);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

/** Runs one line with bash in `cwd`, with npm's cache in a folder of its own there (a fresh user's). */
async function sh(line: string, cwd: string): Promise<{ stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_cache: join(cwd, '.npm-cache'), npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  delete env['NODE_PATH'];
  return promisify(execFile)('bash', ['-c', line], { cwd, env, maxBuffer: 16 * 1024 * 1024, timeout: 180_000 });
}
