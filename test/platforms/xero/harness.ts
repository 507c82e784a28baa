/** Wiring shared by the Xero tests: a fake Xero with data, adapters on their own Redis connections, full reads. */
import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import type { Entity } from '../../../src/glossary.js';
import { createLogger, type Logger } from '../../../src/logger.js';
import type { RecordOf } from '../../../src/platforms/records.js';
import type { BadRecord, Cursor, PlatformAdapter } from '../../../src/platforms/types.js';
import type { z } from 'zod';
import { xeroConfig } from '../../../src/platforms/xero/config.js';
import { XeroAdapter, type XeroAdapterOptions } from '../../../src/platforms/xero/index.js';
import { FakeXero, type FakeXeroOptions } from './fake-xero.js';
import { prefixPattern } from '../../../src/redis/keys.js';

export const TOKEN_KEY = randomBytes(32).toString('base64');

export async function startFake(options: Partial<FakeXeroOptions> = {}): Promise<FakeXero> {
  return FakeXero.start({ xeroTenantId: randomUUID(), clientId: 'XEROCLIENT1', clientSecret: 'xero-secret-1', ...options });
}

/** The tenants-file `platform` of a tenant connected to `fake`, with a fresh refresh token. */
export function xeroPlatform(fake: FakeXero): Record<string, unknown> {
  return {
    kind: 'xero',
    clientId: fake.options.clientId,
    clientSecret: fake.options.clientSecret,
    refreshToken: fake.issueRefreshToken(),
    xeroTenantId: fake.options.xeroTenantId,
    apiUrl: fake.apiUrl,
    tokenUrl: fake.tokenUrl,
  };
}

export interface AdapterHandle {
  adapter: XeroAdapter;
  redis: Redis;
  logs: string[];
  close(): Promise<void>;
}

/** A logger whose JSON lines are kept (to check that no token is ever logged). */
export function capturingLogger(): { logger: Logger; logs: string[] } {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { logger: createLogger({ level: 'debug', destination: sink }), logs };
}

/** An adapter on its own Redis connection, as another process would have. */
export function makeAdapter(
  fake: FakeXero,
  redisUrl: string,
  prefix: string,
  refreshToken: string,
  overrides: Partial<XeroAdapterOptions> = {},
  /** Fields of the tenant's platform config over the fake's (a wrong clientSecret). */
  config: Partial<z.input<typeof xeroConfig>> = {},
): AdapterHandle {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const { logger, logs } = capturingLogger();
  const adapter = new XeroAdapter({
    redis,
    prefix,
    tokenKey: TOKEN_KEY,
    config: xeroConfig.parse({ kind: 'xero', clientId: fake.options.clientId, clientSecret: fake.options.clientSecret, refreshToken, apiUrl: fake.apiUrl, tokenUrl: fake.tokenUrl, ...config }),
    xeroTenantId: fake.options.xeroTenantId,
    logger,
    http: { retryBaseMs: 20 },
    ...overrides,
  });
  return {
    adapter,
    redis,
    logs,
    async close() {
      await adapter.close();
      redis.disconnect();
    },
  };
}

export interface ReadAll<E extends Entity> {
  records: RecordOf[E][];
  bad: BadRecord[];
  pages: number;
}

/** Reads a whole listing of any adapter; `between` runs after each page (to change data mid-listing). */
export async function readAll<E extends Entity>(
  adapter: PlatformAdapter,
  entity: E,
  options: { since?: Cursor; pageSize?: number; between?: (page: number) => void } = {},
): Promise<ReadAll<E>> {
  const out: ReadAll<E> = { records: [], bad: [], pages: 0 };
  let pageToken: string | undefined;
  for (;;) {
    const page = await adapter.readPage(entity, {
      ...(options.since ? { since: options.since } : {}),
      ...(pageToken !== undefined ? { pageToken } : {}),
      pageSize: options.pageSize ?? 100,
    });
    out.pages += 1;
    out.records.push(...page.records);
    out.bad.push(...page.bad);
    options.between?.(out.pages);
    if (page.nextPageToken === undefined) return out;
    if (out.pages > 1000) throw new Error('listing does not end');
    pageToken = page.nextPageToken;
  }
}

/** Every string stored under a prefix: keys, string values, hash fields and values, set and zset members. */
export async function dumpPrefix(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  const stream = redis.scanStream({ match: prefixPattern(prefix), count: 500 });
  for await (const keys of stream as AsyncIterable<string[]>) {
    for (const key of keys) {
      out.push(key);
      const type = await redis.type(key);
      if (type === 'string') out.push((await redis.get(key)) ?? '');
      else if (type === 'hash') out.push(...Object.entries(await redis.hgetall(key)).flat());
      else if (type === 'zset') out.push(...(await redis.zrange(key, 0, -1)));
      else if (type === 'set') out.push(...(await redis.smembers(key)));
      else if (type === 'list') out.push(...(await redis.lrange(key, 0, -1)));
    }
  }
  return out;
}
