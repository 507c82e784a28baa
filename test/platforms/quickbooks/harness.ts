/** Wiring shared by the QuickBooks tests: a double and an adapter on its own Redis connection (full reads: the Xero harness's). */
import { Redis } from 'ioredis';
import { QuickBooksAdapter, type QuickBooksAccess, type QuickBooksAdapterOptions, type QuickBooksLease } from '../../../src/platforms/quickbooks/index.js';
import { PlatformRateLimitedError } from '../../../src/platforms/types.js';
import { capturingLogger } from '../xero/harness.js';
import { QBO_TEST_TOKEN, type QboDouble } from './double.js';

export { capturingLogger, readAll, type ReadAll } from '../xero/harness.js';

/**
 * A QuickBooksAccess for adapter tests: a fixed token (switched by `onRefresh` when the API refuses it), leases
 * without a limit, 429s as the shared limiter would report them. The OAuth room's own tests cover the real one.
 */
export class FixedAccess implements QuickBooksAccess {
  refreshes = 0;
  throttles = 0;
  constructor(
    public current: string = QBO_TEST_TOKEN,
    private readonly onRefresh?: () => string,
  ) {}
  async token(): Promise<string> {
    return this.current;
  }
  async onUnauthorized(rejected: string): Promise<string> {
    this.refreshes += 1;
    if (this.onRefresh && rejected === this.current) this.current = this.onRefresh();
    return this.current;
  }
  async lease(): Promise<QuickBooksLease> {
    return { release: async () => undefined };
  }
  async throttled(retryAfter: string | undefined): Promise<PlatformRateLimitedError> {
    this.throttles += 1;
    const ms = retryAfter !== undefined && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : 60_000;
    return new PlatformRateLimitedError('minute', ms, `QuickBooks limit reached; retry in ${ms / 1000} s`);
  }
  async close(): Promise<void> {}
}

export interface AdapterHandle {
  adapter: QuickBooksAdapter;
  redis: Redis;
  logs: string[];
  close(): Promise<void>;
}

export function makeAdapter(double: QboDouble, redisUrl: string, prefix: string, overrides: Partial<QuickBooksAdapterOptions> = {}): AdapterHandle {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 3 });
  const { logger, logs } = capturingLogger();
  const adapter = new QuickBooksAdapter({
    redis,
    prefix,
    realmId: double.realmId,
    apiUrl: double.apiUrl,
    access: new FixedAccess(),
    logger,
    http: { retryBaseMs: 10 },
    now: double.now,
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
