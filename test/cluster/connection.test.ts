/**
 * Issue 13 item 1 and its bad input: the worker runs on a Redis Cluster (ioredis Cluster from REDIS_CLUSTER_NODES,
 * BullMQ queues and workers on it), and a bad node list, an unreachable cluster, a plain URL at a cluster node or a
 * refused password gives one clear line naming the setting, never the password.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadEnv } from '../../src/config/env.js';
import { connectRedis, createRedis, evictionWarning, redisTargetOf, RedisConnectError } from '../../src/redis/connection.js';
import { sampleData } from '../../src/sample/generate.js';
import { freePort } from '../helpers/redis.js';
import { startTestCluster, type TestCluster } from '../helpers/redis-cluster.js';
import { startRig, tenantsJson, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

let cluster: TestCluster;
let probe: Cluster;
beforeAll(async () => {
  cluster = await startTestCluster();
  probe = cluster.client();
}, 60_000);
afterAll(async () => {
  probe?.disconnect();
  await cluster?.stop();
});

async function connectError(env: Record<string, string>, role: 'worker' | 'producer' = 'producer'): Promise<Error> {
  const target = redisTargetOf(loadEnv(env));
  return connectRedis(createRedis(target, role), target, { waitMs: 0 }).then(
    (c) => {
      c.disconnect();
      throw new Error('connected');
    },
    (err: Error) => err,
  );
}

describe('a Redis Cluster from REDIS_CLUSTER_NODES', () => {
  it('syncs a tenant end to end, queues and workers on the cluster', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'cs-cluster-sync-'));
    const data = sampleData({ contacts: 60, seed: 3, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    await writeSampleFolder(folder, data);
    let rig: Rig | undefined;
    try {
      rig = await startRig({ redisUrl: 'redis://127.0.0.1:1', env: { REDIS_CLUSTER_NODES: cluster.nodes }, tenants: [{ id: 'acme', platform: { kind: 'file', path: folder } }] });
      const run = await rig.sync('acme');
      expect(run.outcome).toBe('succeeded');
      expect(rig.sim.data('client-acme').contacts).toHaveLength(data.contacts.length);
      const again = await rig.sync('acme');
      expect(again.counts['contacts.created'] ?? 0).toBe(0);
    } finally {
      await rig?.close();
      await rm(folder, { recursive: true, force: true });
    }
  }, 120_000);

  it('warns when a server may evict keys, on every master', async () => {
    const target = redisTargetOf(loadEnv({ REDIS_CLUSTER_NODES: cluster.nodes }));
    const client = await connectRedis(createRedis(target, 'producer'), target);
    try {
      expect(await evictionWarning(client)).toBeUndefined();
      const node = probe.nodes('master')[0]!;
      await node.config('SET', 'maxmemory-policy', 'allkeys-lru');
      const dir = await mkdtemp(join(tmpdir(), 'cs-cluster-status-'));
      try {
        expect(await evictionWarning(client)).toMatch(/maxmemory-policy is not noeviction .*allkeys-lru/);
        // `status` says it too (and the start-up log line goes to stderr).
        await writeFile(join(dir, 'tenants.json'), tenantsJson([{ id: 'acme', platform: { kind: 'file', path: dir } }]));
        const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
        const status = spawnSync(process.execPath, ['--import', 'tsx', cli, 'status', '--json'], {
          env: { ...process.env, REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodes, TENANTS_FILE: join(dir, 'tenants.json'), KEY_PREFIX: '{st}', LOG_LEVEL: 'warn' },
          encoding: 'utf8',
        });
        expect(status.status, status.stderr).toBe(0);
        expect((JSON.parse(status.stdout) as { redis: { warning: string | null } }).redis.warning).toMatch(/not noeviction .*allkeys-lru/);
        expect(status.stderr).toMatch(/not noeviction/);
      } finally {
        await rm(dir, { recursive: true, force: true });
        await node.config('SET', 'maxmemory-policy', 'noeviction');
      }
    } finally {
      client.disconnect();
    }
  });
});

describe('bad Redis settings: one line naming the setting', () => {
  it.each([
    [',', /REDIS_CLUSTER_NODES: is empty/],
    ['127.0.0.1:6379,', /REDIS_CLUSTER_NODES: entry 2 is empty/],
    ['127.0.0.1:notaport', /REDIS_CLUSTER_NODES: entry 1 is not host:port/],
    ['http://127.0.0.1:6379', /REDIS_CLUSTER_NODES: entry 1: the scheme must be redis/],
    ['rediss://a:pw1@127.0.0.1:1,redis://a:pw2@127.0.0.1:2', /REDIS_CLUSTER_NODES: entry 2: every node URL must use the same/],
  ])('REDIS_CLUSTER_NODES=%s', (value, message) => {
    let err: unknown;
    try {
      loadEnv({ REDIS_CLUSTER_NODES: value });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(message);
    expect((err as Error).message).not.toMatch(/pw1|pw2/);
  });

  it('an unreachable cluster names REDIS_CLUSTER_NODES and hides the password', async () => {
    const port = await freePort();
    const err = await connectError({ REDIS_CLUSTER_NODES: `redis://user:s3cret@127.0.0.1:${port}` });
    expect(err).toBeInstanceOf(RedisConnectError);
    expect(err.message).toMatch(new RegExp(`^REDIS_CLUSTER_NODES: cannot reach Redis at cluster redis://user:\\*\\*\\*@127.0.0.1:${port}`));
    expect(err.message).not.toContain('s3cret');
  });

  it('a plain REDIS_URL at a cluster node says to set REDIS_CLUSTER_NODES', async () => {
    const err = await connectError({ REDIS_URL: `redis://${cluster.nodes.split(',')[0]!}` });
    expect(err.message).toMatch(/^REDIS_URL points at a Redis Cluster node .*set REDIS_CLUSTER_NODES/);
  });

  it('a refused password fails at once (no waiting), naming the setting, never the password', async () => {
    const target = redisTargetOf(loadEnv({ REDIS_CLUSTER_NODES: `redis://nobody:wr0ngpass@${cluster.nodes.split(',')[0]!}` }));
    const err = await connectRedis(createRedis(target, 'worker'), target, { waitMs: 60_000 }).then(
      () => new Error('connected'),
      (e: Error) => e,
    );
    expect(err.message).toMatch(/^REDIS_CLUSTER_NODES: Redis at cluster .* refused the user\/password/);
    expect(err.message).not.toContain('wr0ngpass');
  }, 30_000);

  it('a rediss:// URL whose certificate is refused fails at once, naming REDIS_URL and the certificate', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cs-tls-'));
    const cert = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
    expect(cert.status).toBe(0);
    const port = await freePort();
    const server = spawn('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', join(dir, 'c.pem'), '--tls-key-file', join(dir, 'k.pem'), '--tls-auth-clients', 'no', '--save', '', '--dir', dir], { stdio: 'ignore' });
    try {
      // Waits for the TLS port to take connections: the refusal below is then the certificate's, not a closed port's.
      for (let i = 0; i < 200; i += 1) {
        const e = await connectError({ REDIS_URL: `rediss://app:t0ps3cret@127.0.0.1:${port}` });
        if (!/ECONNREFUSED/.test(e.message)) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      const target = redisTargetOf(loadEnv({ REDIS_URL: `rediss://app:t0ps3cret@127.0.0.1:${port}` }));
      const err = await connectRedis(createRedis(target, 'worker'), target, { waitMs: 60_000 }).then(
        () => new Error('connected'),
        (e: Error) => e,
      );
      expect(err).toBeInstanceOf(RedisConnectError);
      expect(err.message).toMatch(/^REDIS_URL: the TLS certificate of Redis at rediss:\/\/app:\*\*\*@127.0.0.1:\d+ was refused \(DEPTH_ZERO_SELF_SIGNED_CERT\)/);
      expect(err.message).not.toContain('t0ps3cret');
    } finally {
      server.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
