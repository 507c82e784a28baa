/**
 * `--wait` with no worker consuming the queue (issue 12): the CLI says so within a few seconds and exits 4 (the wait
 * ended, the job did not: issue 28),
 * the job stays queued; with --keep-waiting it says so once and waits for a worker, then for the run.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { runCli, type CliChild } from '../helpers/cli-child.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';

describe('--wait with no worker running', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let dir: string;
  let env: Record<string, string>;
  let worker: RunningWorker | undefined;
  const cli = (args: string[]): CliChild => runCli(args, env);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-cli-noworker-'));
    await mkdir(join(dir, 'data'));
    const tenants = [{ id: 'acme', platform: { kind: 'file', path: join(dir, 'data') } }];
    await writeFile(join(dir, 'tenants.json'), tenantsJson(tenants));
    await writeFile(join(dir, 'list.json'), JSON.stringify([{ number: '0545000001', name: 'Noor' }]));
    rig = await startRig({ redisUrl: redis.url, tenants, worker: false, logLevel: 'warn' });
    env = rig.cliEnv(join(dir, 'tenants.json'));
  });
  afterAll(async () => {
    await worker?.close(10_000);
    await rig?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('sync --wait and calls campaign --wait say that no worker consumes the queue and exit 4; the jobs stay queued', async () => {
    const [sync, campaign] = await Promise.all([
      cli(['sync', '--tenant', 'acme', '--wait']).done,
      cli(['calls', 'campaign', '--tenant', 'acme', '--list', join(dir, 'list.json'), '--yes', '--wait']).done,
    ]);
    expect(sync.code, sync.stderr).toBe(4);
    expect(sync.stderr).toContain(`no worker is consuming the sync queue (${env['REDIS_URL']}, KEY_PREFIX ${env['KEY_PREFIX']})`);
    expect(sync.stderr).toContain('add --keep-waiting to wait for one');
    expect(campaign.code, campaign.stderr).toBe(4);
    expect(campaign.stderr).toContain('no worker is consuming the calls queue');
    expect(campaign.stdout).toMatch(/queued campaign cmp-\S+; not waited for to the end/);
    expect((await rig.app.queues.sync.getJobCounts('waiting')).waiting).toBe(1);
    expect((await rig.app.queues.calls.getJobCounts('waiting')).waiting).toBe(1);
    expect(rig.sim.counters().requests['POST /ai/phone-calls/action/call-bulk']).toBeUndefined();
  });

  it('with --keep-waiting says so once, then waits for a worker and its run', async () => {
    const child = cli(['sync', '--tenant', 'acme', '--wait', '--keep-waiting', '--json']);
    await child.stderrShows('waiting for one (--keep-waiting)');
    // Only now does a worker start: the CLI is still waiting, and gets its run.
    worker = await startWorker(rig.app, { opsPort: 0, schedules: false, queues: ['sync', 'refreshToken'] });
    const r = await child.done;
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as { outcome: string }).outcome).toBe('succeeded');
    // What the CLI asks: a started worker is listed on its queue (BullMQ names its connections).
    expect(await rig.app.queues.sync.getWorkersCount()).toBeGreaterThan(0);
  });
});
