/**
 * A bad schedule in the tenants file (issue 17): named with its tenant and field at start (the worker exits 2
 * before taking any job), and a changed file with one is not applied at all: the running tenants and their
 * schedules stay, and the log says so.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTenants } from '../../src/config/tenants.js';
import { spawnWorker } from '../helpers/child-worker.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, tenantsJson, type Rig, type TenantSpec } from '../helpers/rig.js';

const xeroPlatform = { kind: 'xero', clientId: 'app', clientSecret: 'app-secret', refreshToken: 'rt-1', xeroTenantId: 'org-1' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('tenants file with a bad schedule', () => {
  let redis: TestRedis;
  let folder: string;
  let rig: Rig | undefined;

  beforeAll(async () => {
    redis = await startTestRedis();
    folder = await mkdtemp(join(tmpdir(), 'cs-tenants-'));
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
    await rm(folder, { recursive: true, force: true });
  });

  it('the worker names the tenant and field of a bad time zone and exits 2 without starting', async () => {
    const file = join(folder, 'bad.json');
    await writeFile(
      file,
      tenantsJson([
        { id: 'good', platform: { kind: 'memory' }, extra: { schedule: { cron: '0 3 * * *', tz: 'Asia/Riyadh' } } },
        { id: 'riyad', platform: { kind: 'memory' }, extra: { schedule: { cron: '0 3 * * *', tz: 'Asia/Riyad' } } },
      ]),
    );
    const w = spawnWorker({ REDIS_URL: redis.url, TENANTS_FILE: file, LOG_LEVEL: 'info' });
    const code = await new Promise<number | null>((resolve) => w.process.once('exit', (c) => resolve(c)));
    expect(code, w.output()).toBe(2);
    expect(w.output()).toMatch(/tenants\[1\] \(riyad\)\.schedule\.tz: not a time zone/);
    expect(w.output()).not.toContain('worker started');
  });

  it('the worker refuses a tenants file nested too deep with a clear message and exit 2', async () => {
    const file = join(folder, 'deep.json');
    await writeFile(file, `{"tenants":[{"id":"acme","calls":${'['.repeat(50_000)}${']'.repeat(50_000)}}]}`);
    const w = spawnWorker({ REDIS_URL: redis.url, TENANTS_FILE: file, LOG_LEVEL: 'info' });
    const code = await new Promise<number | null>((resolve) => w.process.once('exit', (c) => resolve(c)));
    expect(code, w.output()).toBe(2);
    expect(w.output()).toMatch(/nested deeper than 32 levels/);
    expect(w.output()).not.toMatch(/Maximum call stack/);
  });

  it('the worker refuses a xero tenant without PLATFORM_TOKEN_KEY at start, naming the tenant, and exits 2', async () => {
    const file = join(folder, 'xero.json');
    await writeFile(file, tenantsJson([{ id: 'books', platform: xeroPlatform }]));
    const w = spawnWorker({ REDIS_URL: redis.url, TENANTS_FILE: file, LOG_LEVEL: 'info', PLATFORM_TOKEN_KEY: '' });
    const code = await new Promise<number | null>((resolve) => w.process.once('exit', (c) => resolve(c)));
    expect(code, w.output()).toBe(2);
    expect(w.output()).toMatch(/tenants\[0\] \(books\)\.platform: a xero tenant needs PLATFORM_TOKEN_KEY/);
    const bad = spawnWorker({ REDIS_URL: redis.url, TENANTS_FILE: file, LOG_LEVEL: 'info', PLATFORM_TOKEN_KEY: 'not-a-key' });
    expect(await new Promise<number | null>((resolve) => bad.process.once('exit', (c) => resolve(c)))).toBe(2);
    expect(bad.output()).toMatch(/PLATFORM_TOKEN_KEY: must be 32 random bytes/);
    expect(bad.output()).not.toContain('not-a-key');
  });

  it('a run whose platform cannot be built ends failed with the reason (its record never stays running)', async () => {
    const specs: TenantSpec[] = [{ id: 'mem', platform: { kind: 'memory', name: 'mem' } }];
    const local = await startRig({ redisUrl: redis.url, tenants: specs });
    try {
      // Past the load checks (setTenants is what a reload calls once they pass): the adapter cannot be made.
      local.app.setTenants(parseTenants(tenantsJson([...specs, { id: 'books', platform: xeroPlatform }]), {}));
      const run = await local.sync('books');
      expect(run.outcome).toBe('failed');
      expect(run.errors.join('\n')).toMatch(/the run could not start: .*PLATFORM_TOKEN_KEY/);
    } finally {
      await local.close();
    }
  });

  it('a changed file with a bad cron is not applied: the previous tenants and schedules stay, and the log says so', async () => {
    const file = join(folder, 'tenants.json');
    const before: TenantSpec[] = [
      { id: 'alpha', platform: { kind: 'memory', name: 'alpha' }, extra: { schedule: { cron: '0 3 * * *', tz: 'Asia/Riyadh' } } },
      { id: 'beta', platform: { kind: 'memory', name: 'beta' }, extra: { schedule: { every: '1h' } } },
    ];
    await writeFile(file, tenantsJson(before));
    rig = await startRig({ redisUrl: redis.url, tenants: before, worker: { schedules: true, tenantsFile: file } });
    const app = rig.app;
    const schedulers = async () =>
      (await app.queues.schedule.getJobSchedulers(0, -1)).map((s) => ({ key: s.key, pattern: s.pattern, tz: s.tz, every: s.every })).sort((a, b) => a.key.localeCompare(b.key));
    const schedulesBefore = await schedulers();
    // The fleet's housekeeping scheduler is put in place with them, and stays whatever the tenants.
    expect(schedulesBefore.map((s) => s.key)).toEqual(['housekeeping', 'tick.alpha.incremental', 'tick.alpha.reconcile', 'tick.beta.incremental', 'tick.beta.reconcile']);

    // alpha changes, beta gets a cron BullMQ cannot schedule, gamma is new: nothing of it may be applied.
    await writeFile(
      file,
      tenantsJson([
        { id: 'alpha', platform: { kind: 'memory', name: 'alpha' }, extra: { schedule: { cron: '0 4 * * *', tz: 'UTC' } } },
        { id: 'beta', platform: { kind: 'memory', name: 'beta' }, extra: { schedule: { cron: '0 25 * * *' } } },
        { id: 'gamma', platform: { kind: 'memory', name: 'gamma' } },
      ]),
    );
    const said = (re: RegExp) => rig!.logs.some((l) => re.test(l));
    while (!said(/tenants file change ignored/)) await sleep(50);
    const line = rig.logs.find((l) => /tenants file change ignored/.test(l)) ?? '';
    expect(line).toMatch(/previous tenants and schedules stay in force/);
    expect(line).toMatch(/tenants\[1\] \(beta\)\.schedule\.cron/);
    expect(app.tenants().map((t) => [t.id, t.schedule.cron ?? t.schedule.every])).toEqual([
      ['alpha', '0 3 * * *'],
      ['beta', 3_600_000],
    ]);
    expect(await schedulers()).toEqual(schedulesBefore);
    expect(said(/tenants file reloaded/)).toBe(false);

    // A good file afterwards is applied whole.
    await writeFile(
      file,
      tenantsJson([
        { id: 'alpha', platform: { kind: 'memory', name: 'alpha' }, extra: { schedule: { cron: '0 4 * * *', tz: 'UTC' } } },
        { id: 'gamma', platform: { kind: 'memory', name: 'gamma' } },
      ]),
    );
    while (!said(/tenants file reloaded/)) await sleep(50);
    expect(app.tenants().map((t) => t.id)).toEqual(['alpha', 'gamma']);
    expect((await schedulers()).map((s) => s.key)).toEqual(['housekeeping', 'tick.alpha.incremental', 'tick.alpha.reconcile', 'tick.gamma.incremental', 'tick.gamma.reconcile']);
  });
});
