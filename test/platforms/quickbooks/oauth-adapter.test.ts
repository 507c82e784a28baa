/**
 * The QuickBooks adapter as the worker builds it (createAdapter from a tenants file) on the real token chain and
 * limiter: the API double accepts only the access tokens the token double issued, so every read goes through
 * Intuit's refresh flow, a 401 through one refresh, and a 429 through the shared limiter.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseTenants } from '../../../src/config/tenants.js';
import { createAdapter, type PlatformAdapter } from '../../../src/platforms/index.js';
import { PlatformRateLimitedError } from '../../../src/platforms/types.js';
import { QuickBooksOAuthDouble } from '../../doubles/quickbooks-oauth.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import { capturingLogger, readAll } from '../xero/harness.js';
import { QboDouble } from './double.js';
import { seed } from './fixtures.js';

const TOKEN_KEY = randomBytes(32).toString('hex');
const T0 = Date.parse('2026-03-01T08:00:00Z');

describe('QuickBooks adapter on the real OAuth room and limiter', () => {
  const redis = useTestRedis();

  async function setUp(): Promise<{ api: QboDouble; auth: QuickBooksOAuthDouble; adapter: (refresh: string) => { adapter: PlatformAdapter; logs: string[] } }> {
    const api = await QboDouble.start({ tokens: [], now: () => T0 + 3_600_000 });
    const auth = await QuickBooksOAuthDouble.start({ clientId: 'ABapp', clientSecret: 'app-secret', realmId: api.realmId, onAccess: (t) => api.acceptToken(t) });
    onTestFinished(() => api.close());
    onTestFinished(() => auth.close());
    seed(api, 3, T0);
    const prefix = testPrefix('qbo');
    const adapter = (refresh: string): { adapter: PlatformAdapter; logs: string[] } => {
      const platform = { kind: 'quickbooks', clientId: 'ABapp', clientSecret: '${QBO_SECRET}', refreshToken: refresh, realmId: api.realmId, environment: 'sandbox', apiUrl: api.apiUrl, tokenUrl: auth.tokenUrl };
      const file = parseTenants(JSON.stringify({ tenants: [{ id: 'initech', collections: { clientId: 'c', clientSecret: 's' }, platform }] }), { QBO_SECRET: 'app-secret' });
      const conn = new Redis(redis.url, { maxRetriesPerRequest: 3 });
      const { logger, logs } = capturingLogger();
      const a = createAdapter(file.tenants[0]!.platform, { logger, redis: conn, prefix, tokenKey: TOKEN_KEY });
      onTestFinished(async () => {
        await a.close?.();
        conn.disconnect();
      });
      return { adapter: a, logs };
    };
    return { api, auth, adapter };
  }

  it('reads with a refreshed token, refreshes once when the API refuses it, and a second process shares the chain', async () => {
    const { api, auth, adapter } = await setUp();
    const r1 = auth.issueRefreshToken();
    const { adapter: a } = adapter(r1);
    expect((await readAll(a, 'contacts')).records).toHaveLength(3);
    expect(auth.tokenCalls.map((c) => c.outcome)).toEqual(['issued']);
    // Intuit stops taking the access token (revoked early, or the hour is up): one refresh, the read goes on.
    for (const t of auth.issuedAccess) api.revokeToken(t);
    auth.expireAccessTokens();
    expect((await readAll(a, 'invoices')).records.length).toBeGreaterThan(0);
    expect(auth.tokenCalls.map((c) => c.outcome)).toEqual(['issued', 'issued']);
    // Another process, started from the same tenants file, uses the stored chain: no refresh, no stale token sent.
    const { adapter: b } = adapter(r1);
    expect((await readAll(b, 'contacts')).records).toHaveLength(3);
    expect(auth.tokenCalls).toHaveLength(2);
    expect(auth.usesOf(r1)).toBe(1);
  });

  it("a 429 makes every process of the company wait Retry-After, through the shared limiter", async () => {
    const { api, auth, adapter } = await setUp();
    const r1 = auth.issueRefreshToken();
    const { adapter: a } = adapter(r1);
    const { adapter: b } = adapter(r1);
    await readAll(a, 'contacts');
    api.fault({ path: 'query', status: 429, headers: { 'Retry-After': '20' } });
    const err = await readAll(a, 'contacts').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformRateLimitedError);
    expect((err as PlatformRateLimitedError).retryAfterMs).toBe(20_000);
    const requests = api.requests.length;
    const other = await readAll(b, 'contacts').catch((e: unknown) => e);
    expect(other).toMatchObject({ code: 'PLATFORM_RATE_LIMITED', scope: 'minute' });
    expect((other as PlatformRateLimitedError).retryAfterMs).toBeGreaterThan(15_000);
    expect(api.requests.length).toBe(requests);
  });
});
