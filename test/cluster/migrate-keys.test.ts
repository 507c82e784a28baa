/**
 * Issue 13 item 3 on a Redis Cluster: a deployment whose state is in the layout before issue 13 (every key
 * `{prefix}:<kind>:<owner>...`, written here with those strings) keeps its id maps, hashes, cursors, dead letters,
 * call ledger and Xero tokens. The worker refuses to start on it, naming `migrate-keys`; the dry run moves nothing;
 * a run stopped after a few keys (--limit, as a kill would) and run again completes; then an incremental and a
 * full sync create nothing.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { QUEUES } from '../../src/queues/names.js';
import { nodesOf } from '../../src/redis/connection.js';
import { keyBase } from '../../src/redis/keys.js';
import { sampleData } from '../../src/sample/generate.js';
import { startWorker } from '../../src/worker.js';
import { unpackToOldHashes } from '../helpers/old-state.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
const NUMBER = '+966501234567';

let cluster: TestCluster;
let probe: Cluster;
let rig: Rig;
let folder: string;
let env: Record<string, string>;

function cli(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Every key of ours under the rig's prefix, both layouts, on every master. */
async function allKeys(): Promise<string[]> {
  const p = rig.env.KEY_PREFIX;
  const out: string[] = [];
  for (const node of nodesOf(rig.app.redis)) {
    out.push(...(await node.keys(`${keyBase(p)}:*`)), ...(await node.keys(`${p.replace(/[{}]/g, '\\$&')}:*`)));
  }
  return out.sort();
}

/**
 * The keys of `keys` that do not expire on their own: a dry run must leave these as they were, while a key with a TTL
 * (a closed BullMQ worker's stalled-check marker, a rate-limit counter) may expire between two listings.
 */
async function lasting(keys: readonly string[]): Promise<string[]> {
  const ttls = await Promise.all(keys.map(async (k) => [k, await rig.app.redis.pttl(k)] as const));
  return ttls.filter(([, ttl]) => ttl === -1).map(([k]) => k);
}

/** Today's name of a tenant's key, written back the way the layout before issue 13 named it. */
function oldName(key: string): string {
  const p = rig.env.KEY_PREFIX;
  return `${p}:${key.slice(keyBase(p).length + 1).replace(/\{([^}]*)\}/, '$1')}`;
}

beforeAll(async () => {
  cluster = await startTestCluster();
  probe = cluster.client();
  folder = await mkdtemp(join(tmpdir(), 'cs-migrate-'));
  const data = sampleData({ contacts: 40, seed: 5, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
  await writeSampleFolder(folder, data);
  const tenants = [{ id: 'acme', platform: { kind: 'file', path: folder } }];
  await writeFile(join(folder, 'tenants.json'), tenantsJson(tenants));
  rig = await startRig({ redisUrl: 'redis://127.0.0.1:1', env: { REDIS_CLUSTER_NODES: cluster.nodes }, tenants });
  env = { ...rig.cliEnv(join(folder, 'tenants.json')), REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodes };
}, 60_000);
afterAll(async () => {
  await rig?.close();
  probe?.disconnect();
  await cluster?.stop();
  await rm(folder, { recursive: true, force: true });
});

describe('upgrading from the layout before issue 13', () => {
  it('keeps every id map, cursor, dead letter, ledger entry and Xero token; no contact is created again', async () => {
    const first = await rig.sync('acme', 'full');
    expect(first.outcome).toBe('succeeded');
    expect(first.counts['contacts.created']).toBe(40);
    await rig.worker?.close(10_000);
    const p = rig.env.KEY_PREFIX;
    const b = keyBase(p);

    // The deployment as the old version left it: records in the old hashes (before packed records), and its keys
    // under their old names, written by hand.
    await unpackToOldHashes(rig.app.redis, p, 'acme');
    for (const key of await allKeys()) {
      if (!key.includes('{acme}')) continue;
      const dump = await rig.app.redis.dumpBuffer(key);
      if (dump === null) continue;
      const ttl = await rig.app.redis.pttl(key);
      await rig.app.redis.restore(oldName(key), ttl > 0 ? ttl : 0, dump);
      await rig.app.redis.unlink(key);
    }
    await rig.app.redis.set(`${p}:calls:ledger:acme:${NUMBER}`, JSON.stringify({ campaign: 'cmp-1', request: '0', state: 'called', at: '1' }), 'PX', 86_400_000);
    await rig.app.redis.set(`${p}:xero:org-1:oauth`, '{"v":1}');
    await rig.app.redis.set(`${p}:xero:org-1:minute`, '1', 'PX', 60_000); // a rate-limit counter: left to expire
    await rig.app.redis.hset(`${p}:ids:ghost:contacts`, 'c1', 'x'); // a tenant no longer in the tenants file
    // The old version's sync queue (BullMQ under KEY_PREFIX itself) with a run requested and one delayed: counted, not moved.
    const oldQueue = new Queue(QUEUES.sync, { connection: rig.app.redis, prefix: p });
    oldQueue.on('error', () => undefined);
    await oldQueue.add('run', { tenantId: 'acme' }, { jobId: 'old-1' });
    await oldQueue.add('run', { tenantId: 'acme' }, { jobId: 'old-2', delay: 3_600_000 });
    await oldQueue.close();
    const old = await allKeys();
    expect(old).toContain(`${p}:ids:acme:contacts`);
    expect(old).toContain(`${p}:cursors:acme`);
    expect(old.filter((k) => k.startsWith(`${b}:`) && k.includes('{acme}'))).toEqual([]);

    // The worker will not start on it.
    await expect(startWorker(rig.app, { opsPort: 0, schedules: false })).rejects.toThrow(/state of acme is in the old key layout \(`<KEY_PREFIX>:<kind>:<owner>...`, every key in one slot\): run `collections-sync migrate-keys`/);

    // A dry run says what would move, and moves nothing.
    const dry = cli(['migrate-keys']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/would move \d+ keys .*add --yes/);
    expect(dry.stdout).toMatch(/not in the tenants file: ghost \(1\)/);
    expect(dry.stdout).toMatch(/old queues still hold jobs \(not moved\): sync 1 waiting, 1 delayed, 0 active/);
    expect(await lasting(await allKeys())).toEqual(await lasting(old));

    // Stopped after 3 keys (as a kill would leave it), then run again: completes; a third run has nothing to do.
    const part = cli(['migrate-keys', '--yes', '--limit', '3', '--json']);
    expect(part.code, part.stderr).toBe(0);
    expect(JSON.parse(part.stdout)).toMatchObject({ applied: true, moved: 3, stopped: true, oldQueueJobs: { sync: { waiting: 1, delayed: 1, active: 0 } } });
    const rest = cli(['migrate-keys', '--yes', '--json']);
    expect(rest.code, rest.stderr).toBe(0);
    const restReport = JSON.parse(rest.stdout) as { moved: number; stopped: boolean; shortLived: number; entriesPacked: number };
    expect(restReport.stopped).toBe(false);
    expect(restReport.entriesPacked).toBeGreaterThan(40);
    // The rate-limit counter; the run lock too when its release came after the run's end was recorded.
    expect(restReport.shortLived).toBeGreaterThanOrEqual(1);
    expect(restReport.moved).toBeGreaterThan(5);
    const again = cli(['migrate-keys', '--yes', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ moved: 0, already: 0, entriesPacked: 0 });

    const after = await allKeys();
    expect(after.filter((k) => k.startsWith(`${p}:`) && /:acme(:|$)/.test(k))).toEqual([]);
    // The old id maps, mirrors and ledgers were packed into the tenant's packed records, and are gone.
    expect(after).toContain(`${b}:rec:{acme}:contacts`);
    expect(after).not.toContain(`${b}:ids:{acme}:contacts`);
    expect(after.filter((k) => ['ids', 'cache', 'ledger'].some((kind) => k.startsWith(`${b}:${kind}:{acme}`)))).toEqual([]);
    expect(after).toContain(`${b}:cursors:{acme}`);
    expect(after).toContain(`${p}:ids:ghost:contacts`);
    expect(await rig.app.redis.get(`${b}:calls:ledger:{acme}:${NUMBER}`)).toMatch(/"state":"called"/);
    expect(await rig.app.redis.pttl(`${b}:calls:ledger:{acme}:${NUMBER}`)).toBeGreaterThan(0);
    expect(await rig.app.redis.get(`${b}:xero:{org-1}:oauth`)).toBe('{"v":1}');

    // The worker starts; nothing is adopted or created again.
    const worker = await startWorker(rig.app, { opsPort: 0, schedules: false });
    onTestFinished(() => worker.close(10_000));
    const incremental = await rig.sync('acme', 'incremental');
    expect(incremental.outcome).toBe('succeeded');
    const full = await rig.sync('acme', 'full');
    expect(full.outcome).toBe('succeeded');
    for (const run of [incremental, full]) {
      expect(run.counts['contacts.created'] ?? 0).toBe(0);
      expect(run.counts['contacts.adopted'] ?? 0).toBe(0);
      expect(run.counts['invoices.created'] ?? 0).toBe(0);
    }
    expect(rig.sim.data('client-acme').contacts).toHaveLength(40);
  }, 180_000);
});
