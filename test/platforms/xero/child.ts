/**
 * Another process using the same Xero connection (run with `node --import tsx test/platforms/xero/child.ts`;
 * config as JSON in XERO_CHILD_CONFIG). `hammer`: after `go` on stdin, reads pages with `loops` loops for
 * `durationMs`, then prints a JSON summary line. `crash`: reads one page and SIGKILLs itself as soon as Xero's
 * token endpoint has answered, before the rotated token is committed.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { Secret } from '../../../src/config/secret.js';
import { createLogger } from '../../../src/logger.js';
import { PlatformError } from '../../../src/platforms/types.js';
import { XeroAdapter } from '../../../src/platforms/xero/index.js';

const configSchema = z.object({
  mode: z.enum(['hammer', 'crash']),
  redisUrl: z.string(),
  prefix: z.string(),
  tokenKey: z.string(),
  clientId: z.string(),
  clientSecret: z.string(),
  refreshToken: z.string(),
  xeroTenantId: z.string(),
  apiUrl: z.string(),
  tokenUrl: z.string(),
  durationMs: z.number().default(3000),
  loops: z.number().int().default(2),
  /** The refresh lock's TTL (a killed holder blocks refreshes this long) and the token call's timeout. */
  lockTtlMs: z.number().optional(),
  tokenTimeoutMs: z.number().optional(),
});

export type XeroChildConfig = z.input<typeof configSchema>;

export interface XeroChildSummary {
  event: 'summary';
  ok: number;
  errors: Record<string, number>;
}

const emit = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

async function main(): Promise<void> {
  const cfg = configSchema.parse(JSON.parse(process.env['XERO_CHILD_CONFIG'] ?? '{}'));
  const redis = new Redis(cfg.redisUrl, { maxRetriesPerRequest: 3 });
  const adapter = new XeroAdapter({
    redis,
    prefix: cfg.prefix,
    tokenKey: cfg.tokenKey,
    clientId: cfg.clientId,
    clientSecret: new Secret(cfg.clientSecret),
    refreshToken: new Secret(cfg.refreshToken),
    xeroTenantId: cfg.xeroTenantId,
    apiUrl: cfg.apiUrl,
    tokenUrl: cfg.tokenUrl,
    logger: createLogger({ level: 'silent' }),
    limits: { perMinute: 1_000_000, perDay: 1_000_000 },
    auth: {
      ...(cfg.lockTtlMs !== undefined ? { lockTtlMs: cfg.lockTtlMs } : {}),
      ...(cfg.tokenTimeoutMs !== undefined ? { requestTimeoutMs: cfg.tokenTimeoutMs } : {}),
    },
    hooks: {
      afterTokenResponse: () => {
        if (cfg.mode !== 'crash') return;
        emit({ event: 'token-answered' });
        process.kill(process.pid, 'SIGKILL');
      },
    },
  });
  if (cfg.mode === 'crash') {
    await adapter.readPage('contacts', { pageSize: 5 });
    emit({ event: 'error', message: 'the crash hook did not run' });
    process.exit(1);
  }
  emit({ event: 'ready' });
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  const summary: XeroChildSummary = { event: 'summary', ok: 0, errors: {} };
  const until = Date.now() + cfg.durationMs;
  await Promise.all(
    Array.from({ length: cfg.loops }, async () => {
      while (Date.now() < until) {
        try {
          await adapter.readPage('contacts', { pageSize: 5 });
          summary.ok += 1;
        } catch (err) {
          const code = err instanceof PlatformError ? err.code : 'other';
          summary.errors[code] = (summary.errors[code] ?? 0) + 1;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }),
  );
  emit(summary);
  await adapter.close();
  redis.disconnect();
  process.exit(0);
}

main().catch((err: unknown) => {
  emit({ event: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
