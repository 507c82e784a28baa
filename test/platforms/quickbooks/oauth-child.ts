/**
 * Another process using the same QuickBooks company's token chain (run with `node --import tsx`; config as JSON in
 * QBO_OAUTH_CHILD_CONFIG). `hammer`: after `go` on stdin, takes tokens and calls the double's API with them for
 * `durationMs` (a 401 gets a fresh token once), then prints a JSON summary line. `crash`: takes one token and
 * SIGKILLs itself as soon as the token endpoint has answered, before the rotated token is saved.
 */
import { Redis } from 'ioredis';
import { request } from 'undici';
import { z } from 'zod';
import { parseTenants } from '../../../src/config/tenants.js';
import { createLogger } from '../../../src/logger.js';
import { quickBooksAccess } from '../../../src/platforms/quickbooks/access.js';
import { authOverrides, crashHooks, emit, hammer, hammerConfigSchema, type HammerSummary } from '../../helpers/hammer.js';

const configSchema = hammerConfigSchema.extend({
  /** The tenant's `platform`, as in a tenants file. */
  platform: z.record(z.string(), z.unknown()),
});

export type QboOAuthChildConfig = z.input<typeof configSchema>;

export type QboOAuthChildSummary = HammerSummary;

async function main(): Promise<void> {
  const cfg = configSchema.parse(JSON.parse(process.env['QBO_OAUTH_CHILD_CONFIG'] ?? '{}'));
  const tenants = parseTenants(JSON.stringify({ tenants: [{ id: 'child', collections: { clientId: 'c', clientSecret: 's' }, platform: cfg.platform }] }), {});
  const platform = tenants.tenants[0]!.platform;
  if (platform.kind !== 'quickbooks') throw new Error('the child needs a quickbooks platform');
  const redis = new Redis(cfg.redisUrl, { maxRetriesPerRequest: 3 });
  const access = quickBooksAccess(platform, {
    redis,
    prefix: cfg.prefix,
    tokenKey: cfg.tokenKey,
    logger: createLogger({ level: 'silent' }),
    auth: authOverrides(cfg),
    hooks: crashHooks(cfg),
  });
  if (cfg.mode === 'crash') {
    await access.token();
    emit({ event: 'error', message: 'the crash hook did not run' });
    process.exit(1);
  }
  const api = `${platform.apiUrl}/v3/company/${platform.realmId}/companyinfo/${platform.realmId}`;
  const call = async (token: string): Promise<number> => {
    const res = await request(api, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
    await res.body.text();
    return res.statusCode;
  };
  const summary = await hammer(cfg, async () => {
    const token = await access.token();
    let status = await call(token);
    if (status === 401) status = await call(await access.onUnauthorized(token));
    if (status !== 200) throw new Error(`API answered ${status}`);
  });
  emit(summary);
  await access.close();
  redis.disconnect();
  process.exit(0);
}

main().catch((err: unknown) => {
  emit({ event: 'error', message: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
