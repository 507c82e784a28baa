/**
 * Exactly once under crashes: the real worker is killed with SIGKILL while requests are in flight and
 * restarted; Redis is restarted mid-run; the service injects 5xx, resets, 429s and commit-then-drop.
 * In the end every platform record is in the service once: nothing missing, nothing duplicated. The scenario
 * lives in test/helpers/crash.ts (test/cluster/crash.test.ts runs it on a Redis Cluster).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requestSync } from '../../src/queues/index.js';
import { waitForRun } from '../../src/state/index.js';
import { expectExactlyOnce, killsAndRestartLandEveryRecordOnce, openCrashRig, withOutputs, type CrashRig } from '../helpers/crash.js';
import { spawnRedis, testPrefix, type SpawnedRedis } from '../helpers/redis.js';
import { tenantsJson } from '../helpers/rig.js';

describe('exactly once under crashes, restarts and service faults', () => {
  let redis: SpawnedRedis;
  let conn: Redis;
  let rig: CrashRig;

  beforeAll(async () => {
    redis = await spawnRedis();
    conn = new Redis(redis.url, { maxRetriesPerRequest: null });
    conn.on('error', () => undefined);
    rig = await openCrashRig({ redisEnv: { REDIS_URL: redis.url }, conn, prefix: testPrefix('crash') });
  });
  afterEach(async () => {
    await rig?.killWorkers();
  });
  afterAll(async () => {
    await rig?.close();
    conn?.disconnect();
    await redis?.stop();
  });

  it('survives kill -9 of the worker, a Redis restart and injected faults, and lands every record once', async () => {
    await killsAndRestartLandEveryRecordOnce(rig, () => redis.restart(500));
  }, 240_000);

  it('stops on SIGTERM at a page boundary within the deadline; the next worker finishes the run', async () => {
    // A tenant of its own, in the tenants file before any worker of this test starts.
    await writeFile(join(rig.folder, 'tenants.json'), tenantsJson([{ id: 'beta', platform: { kind: 'file', path: rig.folder } }]));
    const { requestedAt } = await requestSync(rig.queue, 'beta', 'full', { trigger: 'test' });
    const worker = rig.start({ LOG_LEVEL: 'info' });
    try {
      // SIGTERM only once this worker is up and its run of beta is pushing records.
      await rig.until('the worker to start', () => worker.output().includes('"msg":"worker started"'));
      await rig.until('the run of beta to push records', async () => ((await rig.stores.runs.recent('beta', 1))[0]?.counts['created'] ?? 0) > 50);
      const stopping = Date.now();
      await worker.stop();
      expect(worker.process.signalCode, rig.outputs()).toBeNull();
      expect(worker.process.exitCode, rig.outputs()).toBe(0);
      expect(worker.output(), 'one clear last line').toMatch(/"msg":"stopped"/);
      expect(Date.now() - stopping).toBeLessThan(25_000);
      const unfinished = (await rig.stores.runs.recent('beta', 1))[0];
      expect(unfinished?.outcome, 'the run was interrupted, not finished').toBeUndefined();
      const next = rig.start();
      const run = await waitForRun(rig.stores.runs, 'beta', { mode: 'full', requestedAt, timeoutMs: 120_000 });
      expect(run.outcome, rig.outputs()).toBe('succeeded');
      expectExactlyOnce(rig.sim, 'client-beta', rig.data);
      await next.stop();
    } catch (err) {
      throw withOutputs(rig, err);
    }
  }, 180_000);
});
