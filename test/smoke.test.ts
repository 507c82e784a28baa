import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRedis, testPrefix, type TestRedis } from './helpers/redis.js';

describe('test Redis helper', () => {
  let redis: TestRedis;
  beforeAll(async () => {
    redis = await startTestRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });

  it('gives a Redis that answers and keeps keys under a per-test prefix', async () => {
    const client = new Redis(redis.url);
    const prefix = testPrefix();
    await client.set(`${prefix}:k`, 'v');
    expect(await client.get(`${prefix}:k`)).toBe('v');
    expect(prefix).toMatch(/^\{t-[0-9a-f]{8}\}$/);
    client.disconnect();
  });
});
