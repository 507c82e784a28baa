/**
 * A refresher process SIGKILLed in the middle of a rotation, with the gate closed and the leases drained:
 * requests of the other processes resume when the gate expires (the bound), the rotation job is recovered as
 * stalled by another worker and completes (no lost job), and no request fails.
 */
import { afterAll, expect, it } from 'vitest';
import { authClientKey, type AuthMetrics, type RotateOutcome } from '../../src/auth/index.js';
import { enqueueRefresh } from '../../src/queues/index.js';
import type { AuthSettingsInput } from '../../src/auth/settings.js';
import { CollectionsClient } from '../../src/collections/client.js';
import { Secret } from '../../src/secret.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { dropPrefix, testPrefix, useTestRedis } from '../helpers/redis.js';
import { spawnChild, type Child } from './children.js';
import { buildRig, eventually, type AuthRig } from './harness.js';

const redis = useTestRedis();
let sim: Simulator | undefined;
let child: Child | undefined;
const rigs: AuthRig[] = [];
const prefix = testPrefix('kill');

afterAll(async () => {
  await child?.kill();
  for (const r of rigs) await r.close();
  await sim?.close();
  await dropPrefix(redis.url, prefix);
});

it('a refresher killed with the gate closed stalls others no longer than the gate bound; its job completes elsewhere', async () => {
  sim = await startSimulator({ clients: [{ clientId: 'c1', clientSecret: 's1' }], tokenLifetimeMs: 120_000, faults: { latencyMs: 10, jitterMs: 5 } });
  const settings: AuthSettingsInput = { requestTimeoutMs: 3_000, drainBoundMs: 1_500, tokenCallTimeoutMs: 1_000, lockSlackMs: 1_000, pollMs: 100 };
  const tenants = [{ id: 't1', clientId: 'c1', secret: 's1' }];
  const credentials = (id: string) => (id === 't1' ? { clientId: 'c1', clientSecret: new Secret('s1'), authUrl: sim!.authUrl } : undefined);
  const tenant = { id: 't1', collections: { clientId: 'c1', clientSecret: new Secret('s1') } };

  // This process sends requests (no refresh worker yet, so the killed child takes the rotation job).
  const waits: number[] = [];
  const metrics: AuthMetrics = { rotation: () => undefined, unauthorized: () => undefined, gateWaitMs: (ms) => waits.push(ms) };
  const sender = await buildRig({ url: redis.url, prefix, authUrl: sim.authUrl, settings, metrics });
  const c1 = authClientKey(sim.authUrl, 'c1');
  rigs.push(sender);
  const gateTtlMs = sender.auth.settings.gateTtlMs;
  await sender.auth.refresher.rotate(c1, credentials('t1')!, { reason: 'manual' });
  expect((await sender.auth.status(c1)).version).toBe(1);

  const client = new CollectionsClient({ baseUrl: sim.baseUrl, tokens: sender.auth.providerFor(tenant), retries: 2, backoff: { baseMs: 20, maxMs: 100 } });
  let stop = false;
  let ok = 0;
  const failures: string[] = [];
  const hammer = Promise.all(
    Array.from({ length: 20 }, async () => {
      while (!stop) {
        try {
          await client.listContacts({ size: 1 });
          ok += 1;
        } catch (err) {
          failures.push((err as { code?: string }).code ?? String(err));
        }
      }
    }),
  );

  child = spawnChild({
    redisUrl: redis.url, prefix, authUrl: sim.authUrl, baseUrl: sim.baseUrl, tenants, tenantId: 't1', settings: settings as Record<string, number>,
    startAt: 0, durationMs: 0, concurrency: 0, runWorker: true, worker: { lockDuration: 1_500, stalledInterval: 500 }, pauseBeforeTokenCall: true,
  });
  await child.next('ready');
  const jobId = await enqueueRefresh(sender.queue, { clientKey: c1, tenantId: 't1', reason: 'manual' });
  expect(jobId).toBeDefined();
  await child.next('paused');
  const during = await sender.auth.status(c1);
  expect(during.gateClosed).toBe(true);
  expect(during.leases).toBe(0); // drained before the token call
  const okAtKill = ok;
  await child.kill();
  waits.length = 0;

  // Requests resume once the gate expires, with the old (still valid) token.
  await eventually(async () => (ok > okAtKill + 50 ? true : undefined), gateTtlMs + 5_000, 'requests after the kill');
  expect((await sender.auth.status(c1)).gateClosed).toBe(false);
  expect(waits.length).toBeGreaterThan(0);
  expect(Math.max(...waits)).toBeLessThanOrEqual(gateTtlMs + 1_000);
  expect((await sender.auth.status(c1)).version).toBe(1);

  // Another worker recovers the stalled job and finishes the rotation.
  const done = new Map<string, RotateOutcome>();
  const rescuer = await buildRig({ url: redis.url, prefix, authUrl: sim.authUrl, settings, credentials, worker: { stalledInterval: 300, lockDuration: 1_500 } });
  rigs.push(rescuer);
  rescuer.worker!.on('completed', (job, result: RotateOutcome) => void done.set(job.id ?? '', result));
  const outcome = await eventually(async () => done.get(jobId!), 20_000, `job ${jobId} completed`);
  expect(outcome).toMatchObject({ outcome: 'rotated', version: 2 });
  expect((await sender.auth.status(c1)).version).toBe(2);

  const okAtRotation = ok;
  await eventually(async () => (ok > okAtRotation + 50 ? true : undefined), 10_000, 'requests after the rotation');
  stop = true;
  await hammer;
  await client.close();

  expect(failures).toEqual([]);
  const c = sim.counters();
  expect(c.tokensIssued['c1']).toBe(2);
  expect(c.supersededInFlight).toBe(0);
  expect(c.unauthorized).toEqual({ missing: 0, expired: 0, superseded: 0, invalid: 0 });
  if (process.env['AUTH_TEST_REPORT']) {
    process.stderr.write(`killed: ${JSON.stringify({ gateTtlMs, maxWaitAfterKillMs: Math.max(...waits), ok })}\n`);
  }
});
