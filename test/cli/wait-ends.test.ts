/**
 * Every `--wait` ends with an outcome within a bound it states (issue 28, item 2): a job the worker refuses ends the
 * wait with its reason and exit 1; a worker that vanishes mid-run (kill -9) and a --wait-timeout end it with exit 4;
 * `dead-letters retry --wait` reports, per entity, what was replayed and what needs the source fixed.
 * Real Redis, the simulator, real worker and CLI processes.
 */
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeNdjson } from '../../src/platforms/file/index.js';
import { sampleData } from '../../src/sample/generate.js';
import { startWorker, type RunningWorker } from '../../src/worker.js';
import { spawnWorker } from '../helpers/child-worker.js';
import { runCli, type CliChild } from '../helpers/cli-child.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';

describe('--wait ends with an outcome', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let dir: string;
  let env: Record<string, string>;
  let worker: RunningWorker | undefined;
  let data: ReturnType<typeof sampleData>;
  const cli = (args: string[], extra: Record<string, string> = {}): CliChild => runCli(args, { ...env, ...extra });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'cs-cli-wait-'));
    await mkdir(join(dir, 'acme'));
    data = sampleData({ contacts: 40, seed: 5 });
    await writeNdjson(join(dir, 'acme', 'contacts.ndjson'), data.contacts);
    await writeNdjson(join(dir, 'acme', 'invoices.ndjson'), data.invoices);
    const acme = { id: 'acme', platform: { kind: 'file', path: join(dir, 'acme') } };
    // The CLI's tenants file names t2; the worker's does not (a tenants file changed on one side only).
    await writeFile(join(dir, 'tenants.json'), tenantsJson([acme, { id: 't2', platform: { kind: 'file', path: join(dir, 'acme') } }]));
    await writeFile(join(dir, 'worker-tenants.json'), tenantsJson([acme]));
    rig = await startRig({ redisUrl: redis.url, tenants: [acme], worker: false, logLevel: 'warn' });
    env = rig.cliEnv(join(dir, 'tenants.json'));
  });
  afterAll(async () => {
    await worker?.close(10_000);
    await rig?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('states its bound, and ends with exit 4 when the worker running the job vanishes (kill -9)', async () => {
    rig.sim.setFaults({ latencyMs: 400 });
    const child = spawnWorker({ ...rig.cliEnv(join(dir, 'worker-tenants.json')), SYNC_CONCURRENCY: '1', TENANT_INFLIGHT_LIMIT: '1' });
    try {
      // The wait begins once the child consumes the queue: one that starts slower than the wait's 5 s of grace (a
      // loaded machine) would end it as "no worker", not as the vanished worker this test is about.
      for (let i = 0; i < 1_200 && (await rig.app.queues.sync.getWorkers()).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
      expect((await rig.app.queues.sync.getWorkers()).length, child.output()).toBeGreaterThan(0);
      const wait = cli(['sync', '--tenant', 'acme', '--wait']);
      await wait.stderrShows('waiting for job');
      // The run has started on the child worker: then it dies without a word.
      for (let i = 0; i < 600 && !(await rig.app.stores.runs.last('acme'))?.counts['contacts.created']; i++) await new Promise((r) => setTimeout(r, 100));
      await child.kill9();
      const r = await wait.done;
      expect(r.stderr).toMatch(/waiting for job \S+ on the sync queue for at most 24h \(--wait-timeout\); sooner if the job fails for good or no worker consumes the queue for 5 s/);
      expect(r.code, r.stderr).toBe(4);
      expect(r.stderr).toContain('the worker vanished: no worker has consumed the sync queue');
      expect(r.stderr).toMatch(/job \S+ is active and runs again when a worker starts/);
    } finally {
      await child.kill9();
      rig.sim.setFaults({ latencyMs: 0 });
    }
  }, 120_000);

  it('ends at --wait-timeout with exit 4 while it keeps waiting for a worker', async () => {
    const r = await cli(['backfill', '--tenant', 'acme', '--wait', '--keep-waiting', '--wait-timeout', '8s', '--json']).done;
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain('waiting for one (--keep-waiting)');
    expect(r.stderr).toContain('stopped waiting after 8s (--wait-timeout)');
    expect(JSON.parse(r.stdout)).toMatchObject({ tenant: 'acme', mode: 'full', waited: false, waitEnded: 'timeout' });
    const bad = await cli(['sync', '--tenant', 'acme', '--wait', '--wait-timeout', 'soon']).done;
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--wait-timeout must be a duration such as 90s, 30m or 2h (got "soon")');
  }, 60_000);

  it('prints the reason and exits 1 within seconds when the worker refuses the job (a tenant it does not know)', async () => {
    worker = await startWorker(rig.app, { opsPort: 0, schedules: false, queues: ['sync', 'refreshToken'] });
    const [plain, json] = await Promise.all([cli(['sync', '--tenant', 't2', '--wait']).done, cli(['backfill', '--tenant', 't2', '--wait', '--json']).done]);
    expect(plain.code, plain.stderr).toBe(1);
    expect(plain.stderr).toMatch(/job \S+ failed: unknown tenant "t2": not in the tenants file/);
    expect(json.code, json.stderr).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ tenant: 't2', mode: 'full', waited: false, waitEnded: 'failed', jobState: 'failed' });
  }, 60_000);

  it('dead-letters retry says per entity what was replayed, what still fails and what needs the source fixed', async () => {
    // Three lines that are not records: dead letters without a record, which no replay can push.
    await appendFile(join(dir, 'acme', 'contacts.ndjson'), '{not json\n{"also": broken\nnope\n');
    expect((await rig.sync('acme', 'full')).outcome).toBe('partial');
    expect((await rig.app.stores.deadLetters.counts('acme')).byEntity.contacts).toBe(3);

    const queued = await cli(['dead-letters', 'retry', '--tenant', 'acme']).done;
    expect(queued.code, queued.stderr).toBe(0);
    expect(queued.stdout).toMatch(/queued a replay of acme's dead letters \(job \S+\): 3 dead letters, 0 can be replayed, 3 need the source fixed/);
    expect(queued.stdout).toContain('  contacts: 0 to replay, 3 need the source fixed');

    // No run of acme may still be under way or queued (the run interrupted by the kill -9 above resumes once its
    // lock expires): an ordinary run also ends the dead letter added below, before the retry reads it.
    const sync = rig.app.queues.sync;
    for (let i = 0; i < 900; i++) {
      const c = await sync.getJobCounts('active', 'waiting', 'delayed', 'prioritized', 'waiting-children');
      if (Object.values(c).every((n) => n === 0)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // And one record kept with its dead letter, its very content already in the service with an id map (refused
    // once, pushed since, its dead letter left behind): the replay clears it, sending nothing.
    const kept = data.contacts[0]!;
    await rig.app.stores.deadLetters.add('acme', [{ entity: 'contacts', platformId: kept.id, record: kept, reason: 'refused once', code: 'COLLECTIONS_REJECTED', runId: 'run-x', at: Date.now() }]);
    const writes = rig.sim.counters().writesCommitted;
    const waited = await cli(['dead-letters', 'retry', '--tenant', 'acme', '--wait']).done;
    expect(waited.code, waited.stderr).toBe(3);
    expect(rig.sim.counters().writesCommitted).toBe(writes);
    expect(waited.stdout).toMatch(/acme: replay run \S+ partial; 3 dead letters left/);
    expect(waited.stdout).toContain('  contacts: replayed 1, still failing 0, need the source fixed 3');
    expect(waited.stdout).toMatch(/contacts\.ndjson:\d+: /);
    const json = await cli(['dead-letters', 'retry', '--tenant', 'acme', '--wait', '--json']).done;
    expect(json.code, json.stderr).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({ tenant: 'acme', mode: 'replay', outcome: 'partial', deadLettersLeft: 3, byEntity: { contacts: { replayable: 0, replayed: 0, stillFailing: 0, needsSourceFix: 3 } } });
  }, 120_000);
});
