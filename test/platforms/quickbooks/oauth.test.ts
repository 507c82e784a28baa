/**
 * QuickBooks OAuth through the shared platform-OAuth room, against a double of Intuit's token endpoint over real
 * HTTP and a real Redis: strict rotation (a replaced refresh token is invalid_grant), one refresh at a time across
 * processes, the rotated token saved before use, a lost save landed, a revoked grant failing fast.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { parseTenants } from '../../../src/config/tenants.js';
import type { QuickBooksConfig as QuickBooksTenant } from '../../../src/platforms/quickbooks/config.js';
import { PlatformTokenStore, TokenCipher } from '../../../src/platforms/oauth/index.js';
import { quickBooksAccess, type QuickBooksAccess, type QuickBooksAccessDeps } from '../../../src/platforms/quickbooks/access.js';
import { PlatformError, PlatformRateLimitedError } from '../../../src/platforms/types.js';
import { QuickBooksOAuthDouble, type QuickBooksOAuthOptions } from '../../doubles/quickbooks-oauth.js';
import { spawnJsonChild, type JsonChild } from '../../helpers/json-child.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import { capturingLogger, dumpPrefix } from '../xero/harness.js';
import type { QboOAuthChildConfig, QboOAuthChildSummary } from './oauth-child.js';

const TOKEN_KEY = randomBytes(32).toString('base64');
const cipher = TokenCipher.fromText(TOKEN_KEY);
const CHILD = fileURLToPath(new URL('./oauth-child.ts', import.meta.url));

describe('QuickBooks OAuth: strictly rotating refresh tokens shared through Redis', () => {
  const redis = useTestRedis();
  let client: Redis;

  beforeAll(async () => {
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
  });

  async function double(options: Partial<QuickBooksOAuthOptions> = {}): Promise<QuickBooksOAuthDouble> {
    const d = await QuickBooksOAuthDouble.start({ clientId: 'ABqboClient1', clientSecret: 'qbo-secret-1', realmId: String(9_130_000_000_000_000 + Math.floor(Math.random() * 1e6)), ...options });
    onTestFinished(() => d.close());
    return d;
  }

  /** The tenants-file platform of a company on `d`, parsed as the worker would. */
  function platformOf(d: QuickBooksOAuthDouble, refreshToken: string, clientSecret = d.options.clientSecret): Record<string, unknown> {
    return { kind: 'quickbooks', clientId: d.options.clientId, clientSecret, refreshToken, realmId: d.options.realmId, environment: 'sandbox', apiUrl: d.apiUrl, tokenUrl: d.tokenUrl };
  }
  function tenant(d: QuickBooksOAuthDouble, refreshToken: string, clientSecret?: string): QuickBooksTenant {
    const file = parseTenants(JSON.stringify({ tenants: [{ id: 'qbo', collections: { clientId: 'c', clientSecret: 's' }, platform: platformOf(d, refreshToken, clientSecret) }] }), {});
    const p = file.tenants[0]!.platform;
    if (p.kind !== 'quickbooks') throw new Error('not a quickbooks platform');
    return p;
  }

  /** An access on its own Redis connection, as another process would have. */
  function access(d: QuickBooksOAuthDouble, prefix: string, refreshToken: string, deps: Partial<QuickBooksAccessDeps> & { clientSecret?: string } = {}): { access: QuickBooksAccess; logs: string[] } {
    const conn = new Redis(redis.url, { maxRetriesPerRequest: 3 });
    const { logger, logs } = capturingLogger();
    const { clientSecret, ...rest } = deps;
    const a = quickBooksAccess(tenant(d, refreshToken, clientSecret), { redis: conn, prefix, tokenKey: TOKEN_KEY, logger, ...rest });
    onTestFinished(async () => {
      await a.close();
      conn.disconnect();
    });
    return { access: a, logs };
  }

  async function stored(d: QuickBooksOAuthDouble, prefix: string): Promise<{ version: number; refresh: string; revoked: boolean } | undefined> {
    const s = await new PlatformTokenStore(client, prefix, 'quickbooks', d.options.realmId).read();
    if (!s) return undefined;
    return { version: s.version, refresh: cipher.decrypt(s.state.cur, `quickbooks:${d.options.realmId}:refresh`), revoked: s.state.revoked !== undefined };
  }

  async function api(d: QuickBooksOAuthDouble, token: string): Promise<number> {
    const res = await request(`${d.apiUrl}/v3/company/${d.options.realmId}/companyinfo/${d.options.realmId}`, { headers: { authorization: `Bearer ${token}` } });
    await res.body.text();
    return res.statusCode;
  }

  function child(d: QuickBooksOAuthDouble, prefix: string, refreshToken: string, mode: 'hammer' | 'crash', durationMs = 3000): JsonChild<QboOAuthChildSummary> {
    const config: QboOAuthChildConfig = { mode, redisUrl: redis.url, prefix, tokenKey: TOKEN_KEY, platform: platformOf(d, refreshToken), durationMs, lockTtlMs: 2_000, tokenTimeoutMs: 1_000 };
    const c = spawnJsonChild<QboOAuthChildSummary>(CHILD, 'QBO_OAUTH_CHILD_CONFIG', config);
    onTestFinished(() => c.kill());
    return c;
  }

  it('refreshes with Basic auth, saves the rotated refresh token before the access token is used, and sends it next', async () => {
    const d = await double();
    const prefix = testPrefix('qbo');
    const r1 = d.issueRefreshToken();
    const atAnswer: { stored: string | undefined; apiCalls: number }[] = [];
    const { access: a } = access(d, prefix, r1, {
      hooks: { afterTokenResponse: async () => void atAnswer.push({ stored: (await stored(d, prefix))?.refresh, apiCalls: d.apiCalls.length }) },
    });
    const t1 = await a.token();
    expect(await api(d, t1)).toBe(200);
    const r2 = d.issuedRefresh.at(-1)!;
    expect(atAnswer).toEqual([{ stored: r1, apiCalls: 0 }]);
    expect(await stored(d, prefix)).toEqual({ version: 2, refresh: r2, revoked: false });
    // An hour's token is used as it is: no second call.
    expect(await a.token()).toBe(t1);
    expect(d.tokenCalls).toHaveLength(1);
    // A 401 makes one refresh, however many calls saw it; the next one sends the rotated token.
    d.expireAccessTokens();
    expect(await api(d, t1)).toBe(401);
    const fresh = await Promise.all([a.onUnauthorized(t1), a.onUnauthorized(t1), a.onUnauthorized(t1)]);
    expect(new Set(fresh).size).toBe(1);
    expect(await api(d, fresh[0])).toBe(200);
    expect(d.tokenCalls.map((c) => [c.token, c.outcome])).toEqual([[r1, 'issued'], [r2, 'issued']]);
    // Another process starting from the same tenants file takes the stored chain, not its stale seed.
    const { access: b } = access(d, prefix, r1);
    expect(await b.token()).toBe(fresh[0]);
    expect(d.usesOf(r1)).toBe(1);
  });

  it('two processes and the parent hammering one company never send the same refresh token twice', async () => {
    // Access tokens live 1 s (used for 750 ms) and the endpoint is slow: refreshes race all the time.
    const d = await double({ accessTtlS: 1, tokenDelayMs: 40 });
    const prefix = testPrefix('qbo');
    const r1 = d.issueRefreshToken();
    const kids = [child(d, prefix, r1, 'hammer', 4000), child(d, prefix, r1, 'hammer', 4000)];
    await Promise.all(kids.map((k) => k.next('ready')));
    const { access: parent } = access(d, prefix, r1);
    const until = Date.now() + 4000;
    kids.forEach((k) => k.go());
    let parentOk = 0;
    while (Date.now() < until) {
      const token = await parent.token();
      const status = await api(d, token);
      if (status === 200 || (await api(d, await parent.onUnauthorized(token))) === 200) parentOk += 1;
    }
    const summaries = await Promise.all(kids.map((k) => k.summary()));
    for (const s of summaries) {
      expect(s.errors).toEqual({});
      expect(s.ok).toBeGreaterThan(0);
    }
    expect(parentOk).toBeGreaterThan(0);
    const uses = [...d.uses().values()];
    expect(uses.length).toBeGreaterThanOrEqual(3);
    expect(uses.every((n) => n === 1)).toBe(true);
    expect(d.tokenCalls.every((c) => c.outcome === 'issued')).toBe(true);
  });

  it('a revoked grant fails fast with what to do, every process stops calling Intuit, and a new refresh token restarts the chain', async () => {
    const d = await double();
    const prefix = testPrefix('qbo');
    const r1 = d.issueRefreshToken();
    const { access: a, logs } = access(d, prefix, r1);
    await a.token();
    d.revokeAll();
    const err = await a.onUnauthorized(d.issuedAccess.at(-1)!).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ code: 'PLATFORM_AUTH_FAILED', retryable: false });
    expect((err as Error).message).toMatch(
      new RegExp(`quickbooks: the connection to QuickBooks company \\(realmId\\) ${d.options.realmId} was revoked or has expired .*Reconnect the app to that company in QuickBooks.*com\\.intuit\\.quickbooks\\.accounting.*new refresh token in the tenants file \\(platform\\.refreshToken\\)`),
    );
    // Intuit's transaction id, which its support asks for, is named with the refusal.
    expect((err as Error).message).toMatch(/answered invalid_grant, intuit_tid 1-[0-9a-f]{16}\)/);
    expect((await stored(d, prefix))?.revoked).toBe(true);
    const calls = d.tokenCalls.length;
    const { access: other } = access(d, prefix, r1);
    await expect(other.token()).rejects.toMatchObject({ code: 'PLATFORM_AUTH_FAILED' });
    expect(d.tokenCalls).toHaveLength(calls);
    expect(logs.join('')).toContain('the connection was revoked or expired');

    const { access: reconnected } = access(d, prefix, d.issueRefreshToken());
    expect(await api(d, await reconnected.token())).toBe(200);
    expect(d.tokenCalls.at(-1)).toMatchObject({ outcome: 'issued' });
  });

  it('a wrong client secret is an auth failure naming the setting, and marks nothing revoked', async () => {
    const d = await double();
    const prefix = testPrefix('qbo');
    const { access: a } = access(d, prefix, d.issueRefreshToken(), { clientSecret: 'not-the-secret' });
    const err = await a.token().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PLATFORM_AUTH_FAILED', retryable: false });
    expect((err as Error).message).toMatch(/quickbooks: the token endpoint refused the app's credentials \(invalid_client, intuit_tid 1-[0-9a-f]+\): check platform\.clientId and platform\.clientSecret/);
    expect((err as Error).message).not.toContain('not-the-secret');
    expect((await stored(d, prefix))?.revoked).toBe(false);
  });

  it('a save lost after the answer (lock lost, another process refused meanwhile) is landed: the chain goes on', async () => {
    const d = await double();
    const prefix = testPrefix('qbo');
    const r1 = d.issueRefreshToken();
    const lockKey = new PlatformTokenStore(client, prefix, 'quickbooks', d.options.realmId).lockKey;
    const { access: other } = access(d, prefix, r1, { auth: { lockWaitMs: 5_000 } });
    let otherError: unknown;
    let once = true;
    const { access: a, logs } = access(d, prefix, r1, {
      hooks: {
        afterTokenResponse: async () => {
          if (!once) return;
          once = false;
          // Our lock expired while Intuit answered: another process takes it and sends the same (now spent) token.
          await client.set(lockKey, 'expired-holder', 'PX', 200);
          otherError = await other.token().catch((e: unknown) => e);
        },
      },
    });
    const token = await a.token();
    const r2 = d.issuedRefresh.at(-1)!;
    expect(d.tokenCalls.map((c) => [c.token, c.outcome])).toEqual([[r1, 'issued'], [r1, 'invalid_grant']]);
    expect(otherError).toMatchObject({ code: 'PLATFORM_AUTH_FAILED' });
    // The answer was landed over the revoked mark the refusal left: the chain is r2, usable by everyone.
    expect(await stored(d, prefix)).toMatchObject({ refresh: r2, revoked: false });
    expect(logs.join('')).toContain('saved after the lock was lost');
    expect(await api(d, token)).toBe(200);
    expect(await other.token()).toBe(token);
    d.expireAccessTokens();
    expect(await api(d, await other.onUnauthorized(token))).toBe(200);
    expect(d.tokenCalls.at(-1)).toMatchObject({ token: r2, outcome: 'issued' });
  });

  it('a process killed between the answer and the save loses the chain: the next refresh says to reconnect, once', async () => {
    const d = await double();
    const prefix = testPrefix('qbo');
    const r1 = d.issueRefreshToken();
    const k = child(d, prefix, r1, 'crash');
    await k.next('token-answered');
    expect((await k.exited).signal).toBe('SIGKILL');
    expect(await stored(d, prefix)).toMatchObject({ refresh: r1, revoked: false });
    const { access: a } = access(d, prefix, r1, { auth: { lockTtlMs: 2_000 } });
    await expect(a.token()).rejects.toThrow(/was revoked or has expired.*Reconnect the app/);
    expect(d.tokenCalls.map((c) => c.outcome)).toEqual(['issued', 'invalid_grant']);
  });

  it('keeps no raw token or secret in Redis or the logs', async () => {
    const d = await double({ accessTtlS: 1 });
    const prefix = testPrefix('qbo');
    const { access: a, logs } = access(d, prefix, d.issueRefreshToken());
    let token = await a.token();
    for (let i = 0; i < 3; i++) {
      d.expireAccessTokens();
      token = await a.onUnauthorized(token);
    }
    d.revokeAll();
    await a.onUnauthorized(token).catch(() => undefined);
    const tokens = [...d.issuedRefresh, ...d.issuedAccess];
    expect(d.issuedAccess.length).toBe(4);
    const all = await dumpPrefix(client, prefix);
    expect(all.some((s) => s.includes('quickbooks:{'))).toBe(true);
    expect(all.filter((s) => tokens.some((t) => s.includes(t.slice(4))))).toEqual([]);
    const text = logs.join('');
    expect(text).toContain('tokens rotated');
    expect(tokens.filter((t) => text.includes(t.slice(4)))).toEqual([]);
    expect(text).not.toContain(d.options.clientSecret);
  });
});

describe('QuickBooks limits: 500 a minute and 10 in flight per company, across processes', () => {
  const redis = useTestRedis();
  const conns: Redis[] = [];
  afterAll(async () => {
    for (const c of conns) c.disconnect();
  });

  function accessFor(realmId: string, prefix: string, limits: QuickBooksAccessDeps['limits'] = {}): QuickBooksAccess {
    const conn = new Redis(redis.url);
    conns.push(conn);
    const t = parseTenants(
      JSON.stringify({ tenants: [{ id: 'q', collections: { clientId: 'c', clientSecret: 's' }, platform: { kind: 'quickbooks', clientId: 'a', clientSecret: 's', refreshToken: 'r', realmId, environment: 'production' } }] }),
      {},
    ).tenants[0]!.platform as QuickBooksTenant;
    return quickBooksAccess(t, { redis: conn, prefix, tokenKey: TOKEN_KEY, limits });
  }

  it('an 11th call waits for one of the 10 in flight, whichever process holds them; another company is not held up', async () => {
    const prefix = testPrefix('qbo');
    const [a, b] = [accessFor('111', prefix, { concurrentWaitMs: 300 }), accessFor('111', prefix, { concurrentWaitMs: 300 })];
    const held = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).lease()));
    const refused = await b.lease().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PlatformRateLimitedError);
    expect(refused).toMatchObject({ scope: 'concurrent' });
    await (await accessFor('222', prefix).lease()).release();
    const waiting = a.lease();
    await held[0]!.release();
    await (await waiting).release();
    await Promise.all(held.slice(1).map((l) => l.release()));
  });

  it('the 501st call in a minute is refused with how long to wait, across processes', async () => {
    const prefix = testPrefix('qbo');
    const [a, b] = [accessFor('333', prefix), accessFor('333', prefix)];
    for (let i = 0; i < 500; i++) await (await (i % 2 ? a : b).lease()).release();
    const err = await a.lease().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformRateLimitedError);
    expect(err).toMatchObject({ scope: 'minute' });
    expect((err as PlatformRateLimitedError).retryAfterMs).toBeGreaterThan(50_000);
    expect((err as Error).message).toMatch(/^quickbooks: per-minute limit reached/);
  });

  it('a 429 stops every process for Retry-After, or 60 s without one', async () => {
    const prefix = testPrefix('qbo');
    const [a, b] = [accessFor('444', prefix), accessFor('444', prefix)];
    const limited = await a.throttled('30');
    expect(limited).toMatchObject({ code: 'PLATFORM_RATE_LIMITED', scope: 'minute', retryAfterMs: 30_000 });
    const blocked = await b.lease().catch((e: unknown) => e);
    expect(blocked).toMatchObject({ scope: 'minute' });
    expect((blocked as PlatformRateLimitedError).retryAfterMs).toBeGreaterThan(25_000);
    expect((blocked as PlatformRateLimitedError).retryAfterMs).toBeLessThanOrEqual(30_000);
    const c = accessFor('555', prefix);
    expect(await c.throttled(undefined)).toMatchObject({ retryAfterMs: 60_000 });
    expect(((await c.lease().catch((e: unknown) => e)) as PlatformRateLimitedError).retryAfterMs).toBeGreaterThan(55_000);
  });
});
