/**
 * OPS_PORT has one meaning (issue 11): 0 is off, in the env and in `startWorker`'s option alike; a test that
 * wants any free port says `'random'`, which is not a value of the env.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEnv } from '../../src/config/env.js';
import { startWorker, type WorkerOptions } from '../../src/worker.js';
import { freePort, useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';

describe('the ops port', () => {
  const redis = useTestRedis();
  let rig: Rig;

  beforeAll(async () => {
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'memory', name: 'acme' } }], env: { OPS_PORT: '0' }, worker: false });
  });
  afterAll(async () => {
    await rig?.close();
  });

  /** The ops server a worker with no queues and these options starts (its port, or undefined), closed again. */
  async function opsOf(options: WorkerOptions): Promise<number | undefined> {
    const worker = await startWorker(rig.app, { queues: [], schedules: false, ...options });
    try {
      const port = worker.ops?.port;
      if (port !== undefined) expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
      return port;
    } finally {
      await worker.close();
    }
  }

  it('is off when OPS_PORT is 0 and when the option is 0', async () => {
    expect(rig.env.OPS_PORT).toBe(0);
    expect(await opsOf({})).toBeUndefined();
    expect(await opsOf({ opsPort: 0 })).toBeUndefined();
  });

  it("listens on the port given, or on any free port for 'random'", async () => {
    const port = await freePort();
    expect(await opsOf({ opsPort: port })).toBe(port);
    const random = await opsOf({ opsPort: 'random' });
    expect(random).toBeGreaterThan(0);
  });

  it('refuses a port out of range, naming the option', async () => {
    await expect(startWorker(rig.app, { queues: [], schedules: false, opsPort: -1 })).rejects.toThrow("startWorker: opsPort must be a port (0 = off) or 'random', got -1");
  });

  it('the env schema reads OPS_PORT 0 as 0 (off) and refuses a negative one', () => {
    expect(loadEnv({ OPS_PORT: '0' }).OPS_PORT).toBe(0);
    expect(() => loadEnv({ OPS_PORT: '-1' })).toThrow(/OPS_PORT/);
  });
});
