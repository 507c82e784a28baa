import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { testPrefix, useTestRedis } from './helpers/redis.js';

describe('test Redis helper', () => {
  const redis = useTestRedis();

  it('gives a Redis that answers and keeps keys under a per-test prefix', async () => {
    const client = new Redis(redis.url);
    const prefix = testPrefix();
    await client.set(`${prefix}:k`, 'v');
    expect(await client.get(`${prefix}:k`)).toBe('v');
    expect(prefix).toMatch(/^\{t-[0-9a-f]{8}\}$/);
    client.disconnect();
  });
});
