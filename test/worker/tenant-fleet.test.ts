/**
 * Tenants as data across a fleet: two workers on one Redis, the control API on the first. A tenant created, changed
 * and removed over the API reaches the second worker within 5 s without a restart (its lookup, its schedulers), a
 * worker that was down catches up when it starts, and a run of the new tenant lands its records through the second
 * worker. Real Redis, the simulator over real HTTP.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/api/index.js';
import { requestSync } from '../../src/queues/index.js';
import { waitForRun } from '../../src/state/index.js';
import { ApiClient } from '../helpers/openapi.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';

const FULL = 'fleet-key-Ur7Kd2Wq9XbN4tLm8VzHc3Jp6Fs5Gy';
const SECRET = 'zeta-client-secret-Hq7Wm2Kx9Lp';
const T = '2026-11-02T08:15:00Z';
/** What the issue allows a change to take to reach every worker. */
const REACH_MS = 5_000;

async function within<T>(ms: number, what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<{ value: T; tookMs: number }> {
  const start = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== undefined) return { value, tookMs: Date.now() - start };
    if (Date.now() - start > ms) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('tenants over the API, across a two-worker fleet', () => {
  const redis = useTestRedis();
  let a: Rig;
  let b: Rig | undefined;
  let api: ApiClient;
  let root: string;
  let folder: string;
  const shared = (): Record<string, string> => ({ PLATFORM_TOKEN_KEY: TOKEN_KEY, FILE_PLATFORM_ROOT: root, TENANT_STORE_POLL_MS: '250' });
  const startB = async (): Promise<Rig> =>
    startRig({ redisUrl: redis.url, sim: a.sim, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], env: { ...shared(), KEY_PREFIX: a.env.KEY_PREFIX }, worker: { schedules: true } });
  const entry = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    collections: { clientId: 'client-zeta', clientSecret: SECRET },
    platform: { kind: 'file', path: folder },
    schedule: { every: '10m' },
    ...extra,
  });

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'cs-tenant-fleet-'));
    folder = join(root, 'zeta');
    await mkdir(folder);
    await writeFile(join(folder, 'contacts.ndjson'), ['C1', 'C2', 'C3'].map((id) => JSON.stringify({ id, updatedAt: T, name: `Company ${id}` })).join('\n') + '\n');
    const port = await freePort();
    a = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }],
      simulator: {
        clients: [
          { clientId: 'client-acme', clientSecret: 'secret-acme-x9' },
          { clientId: 'client-zeta', clientSecret: SECRET },
        ],
      },
      env: { ...shared(), WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', API_KEYS: `full:${FULL}` },
      // The API and the schedules here, no sync runs: worker b runs them.
      worker: { schedules: true, queues: ['schedule'] },
    });
    b = await startB();
    api = new ApiClient(openApiDocument(), `http://127.0.0.1:${port}`);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    if (root) await rm(root, { recursive: true, force: true });
  });

  const schedulerOf = async (id: string) => (await a.app.queues.schedule.getJobScheduler(`tick.${id}.incremental`)) ?? undefined;

  it('a tenant created on one worker is known to the other within 5 s, with its schedulers, and syncs there', async () => {
    const made = await api.call('POST', '/v1/tenants', { key: FULL, body: entry('zeta') });
    expect(made.status).toBe(201);
    const known = await within(REACH_MS, 'zeta known to worker b', () => b?.app.tenant('zeta'));
    expect(known.value.collections.clientSecret.reveal()).toBe(SECRET);
    const scheduled = await within(REACH_MS, 'zeta scheduled', () => schedulerOf('zeta'));
    expect(scheduled.value.every).toBe(600_000);
    expect(await a.app.queues.schedule.getJobScheduler('tick.zeta.reconcile')).toBeTruthy();

    // Worker b runs it (a works no sync job).
    const { requestedAt } = await requestSync(b!.app.queues.sync, 'zeta', 'full', { trigger: 'test' });
    const run = await waitForRun(b!.app.stores.runs, 'zeta', { mode: 'full', requestedAt, timeoutMs: 30_000 });
    expect(run.outcome).toBe('succeeded');
    expect(a.sim.data('client-zeta').contacts.map((c) => c.extPlatformId).sort()).toEqual(['C1', 'C2', 'C3']);
  });

  it('a change reaches the other worker within 5 s (a new schedule in place), and a delete removes the tenant and its schedulers there', async () => {
    const merge = { 'content-type': 'application/merge-patch+json' };
    expect((await api.call('PATCH', '/v1/tenants/zeta', { key: FULL, body: { schedule: { every: '20m' } }, headers: merge })).status).toBe(200);
    await within(REACH_MS, 'the change known to worker b', () => (b?.app.tenant('zeta')?.schedule.every === 1_200_000 ? true : undefined));
    await within(REACH_MS, 'the new schedule in place', async () => ((await schedulerOf('zeta'))?.every === 1_200_000 ? true : undefined));

    expect((await api.call('DELETE', '/v1/tenants/zeta', { key: FULL })).status).toBe(204);
    await within(REACH_MS, 'zeta gone from worker b', () => (b?.app.tenant('zeta') === undefined ? true : undefined));
    await within(REACH_MS, 'zeta unscheduled', async () => ((await schedulerOf('zeta')) === undefined && (await a.app.queues.schedule.getJobScheduler('tick.zeta.reconcile')) === undefined ? true : undefined));
    // The file's tenant and its schedulers stay.
    expect(b?.app.tenant('acme')).toBeDefined();
    expect(await schedulerOf('acme')).toBeDefined();
  });

  it('a worker that was down catches up when it starts', async () => {
    await b?.close();
    b = undefined;
    expect((await api.call('POST', '/v1/tenants', { key: FULL, body: entry('omar', { collections: { clientId: 'client-zeta', clientSecret: SECRET } }) })).status).toBe(201);
    b = await startB();
    expect(b.app.tenant('omar')?.platform.kind).toBe('file');
    expect(b.app.tenant('zeta')).toBeUndefined();
    expect(b.app.tenantStore.seen).toBeGreaterThanOrEqual(4);
  });
});
