/**
 * Another process using the same Xero connection (run with `node --import tsx test/platforms/xero/child.ts`;
 * config as JSON in XERO_CHILD_CONFIG). `hammer`: after `go` on stdin, reads pages with `loops` loops for
 * `durationMs`, then prints a JSON summary line. `crash`: reads one page and SIGKILLs itself as soon as Xero's
 * token endpoint has answered, before the rotated token is committed.
 */
import { Redis } from 'ioredis';
import { z } from 'zod';
import { createLogger } from '../../../src/logger.js';
import { xeroConfig } from '../../../src/platforms/xero/config.js';
import { XeroAdapter } from '../../../src/platforms/xero/index.js';
import { authOverrides, crashHooks, emit, hammer, hammerConfigSchema, type HammerSummary } from '../../helpers/hammer.js';

const configSchema = hammerConfigSchema.extend({
  clientId: z.string(),
  clientSecret: z.string(),
  refreshToken: z.string(),
  xeroTenantId: z.string(),
  apiUrl: z.string(),
  tokenUrl: z.string(),
});

export type XeroChildConfig = z.input<typeof configSchema>;

export type XeroChildSummary = HammerSummary;

async function main(): Promise<void> {
  const cfg = configSchema.parse(JSON.parse(process.env['XERO_CHILD_CONFIG'] ?? '{}'));
  const redis = new Redis(cfg.redisUrl, { maxRetriesPerRequest: 3 });
  const adapter = new XeroAdapter({
    redis,
    prefix: cfg.prefix,
    tokenKey: cfg.tokenKey,
    config: xeroConfig.parse({ kind: 'xero', clientId: cfg.clientId, clientSecret: cfg.clientSecret, refreshToken: cfg.refreshToken, apiUrl: cfg.apiUrl, tokenUrl: cfg.tokenUrl }),
    xeroTenantId: cfg.xeroTenantId,
    logger: createLogger({ level: 'silent' }),
    limits: { perMinute: 1_000_000, perDay: 1_000_000 },
    auth: authOverrides(cfg),
    hooks: crashHooks(cfg),
  });
  if (cfg.mode === 'crash') {
    await adapter.readPage('contacts', { pageSize: 5 });
    emit({ event: 'error', message: 'the crash hook did not run' });
    process.exit(1);
  }
  const summary = await hammer(cfg, async () => void (await adapter.readPage('contacts', { pageSize: 5 })));
  emit(summary);
  await adapter.close();
  redis.disconnect();
  process.exit(0);
}

main().catch((err: unknown) => {
  emit({ event: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
