/**
 * The worker's Redis connection sends the commands issued in one tick in one write (src/redis/coalesce.ts): they
 * wait in the corked socket until the tick ends (a plain ioredis client writes each at once), Redis reads them in one
 * go (INFO's `total_reads_processed`) and answers each in order; a reconnect's new socket is coalesced too.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { connectRedis, createRedis, redisTargetOf } from '../../src/redis/connection.js';
import { testPrefix, useSpawnedRedis } from '../helpers/redis.js';

const COMMANDS = 200;

async function readsBy(admin: Redis, fn: () => Promise<unknown>): Promise<number> {
  const readsNow = async (): Promise<number> => Number(/total_reads_processed:(\d+)/.exec(await admin.info('stats'))?.[1]);
  const before = await readsNow();
  await fn();
  // The INFO that reads the count is itself one read.
  return (await readsNow()) - before - 1;
}

interface Tick {
  answers: (string | null)[];
  /** The socket right after the tick's commands were issued: corked, and the bytes it holds back. */
  corked: number;
  heldBytes: number;
}

/** COMMANDS SETs and GETs issued in one tick; resolves with the GETs' answers and the socket's state meanwhile. */
async function oneTick(client: Redis, prefix: string): Promise<Tick> {
  const sets: Promise<unknown>[] = [];
  const gets: Promise<string | null>[] = [];
  for (let i = 0; i < COMMANDS / 2; i += 1) {
    sets.push(client.set(`${prefix}:k${i}`, `v${i}`));
    gets.push(client.get(`${prefix}:k${i}`));
  }
  const { writableCorked: corked, writableLength: heldBytes } = client.stream;
  await Promise.all(sets);
  return { answers: await Promise.all(gets), corked, heldBytes };
}

const values = Array.from({ length: COMMANDS / 2 }, (_, i) => `v${i}`);

describe('commands of one tick leave in one write', () => {
  const server = useSpawnedRedis();
  const open: Redis[] = [];
  afterEach(() => {
    for (const c of open.splice(0)) c.disconnect();
  });

  async function clients(): Promise<{ worker: Redis; plain: Redis; admin: Redis }> {
    const target = redisTargetOf({ REDIS_URL: server.url });
    const worker = await connectRedis(createRedis(target, 'worker'), target);
    const plain = new Redis(server.url);
    const admin = new Redis(server.url);
    open.push(worker, plain, admin);
    await plain.ping();
    await admin.ping();
    return { worker, plain, admin };
  }

  it('sends a tick of commands in one write, answered in order, where a plain client needs many', async () => {
    const { worker, plain, admin } = await clients();
    const prefix = testPrefix('coalesce');
    let tick: Tick | undefined;
    const reads = await readsBy(admin, async () => (tick = await oneTick(worker, `${prefix}:w`)));
    expect(tick?.answers).toEqual(values);
    expect(tick?.corked).toBe(1);
    expect(tick?.heldBytes).toBeGreaterThan(COMMANDS * 20);
    expect(worker.stream.writableCorked).toBe(0);
    // One write of ~7 KB is one read (two if the kernel splits it).
    expect(reads).toBeLessThanOrEqual(2);
    const direct = await oneTick(plain, `${prefix}:p`);
    expect(direct.answers).toEqual(values);
    expect(direct.corked).toBe(0);
  });

  it('coalesces the new socket of a reconnect', async () => {
    const { worker, admin } = await clients();
    const prefix = testPrefix('coalesce-again');
    await server.restart(100);
    await admin.ping();
    await worker.ping();
    let tick: Tick | undefined;
    const reads = await readsBy(admin, async () => (tick = await oneTick(worker, prefix)));
    expect(tick?.answers).toEqual(values);
    expect(tick?.corked).toBe(1);
    expect(reads).toBeLessThanOrEqual(2);
  });
});
