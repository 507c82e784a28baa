import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { PlatformError } from '../../../src/platforms/types.js';
import { TokenCipher, XeroTokenStore } from '../../../src/platforms/xero/index.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import { spawnXeroChild, type XeroChild } from './children.js';
import type { FakeXero } from './fake-xero.js';
import { buildContacts } from './fixtures.js';
import { dumpPrefix, makeAdapter, startFake, TOKEN_KEY, type AdapterHandle } from './harness.js';
import { connectionKey } from '../../../src/redis/keys.js';

const T0 = Date.parse('2026-03-01T08:00:00Z');
const cipher = TokenCipher.fromText(TOKEN_KEY);

describe('Xero OAuth: rotating refresh tokens shared through Redis', () => {
  const redis = useTestRedis();
  let client: Redis;

  beforeAll(async () => {
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
  });

  async function fakeWith(options: Parameters<typeof startFake>[0] = {}): Promise<FakeXero> {
    const fake = await startFake({ perMinute: 1_000_000, perDay: 1_000_000, ...options });
    fake.data.Contacts = buildContacts(5, { startMs: T0 });
    onTestFinished(() => fake.close());
    return fake;
  }

  function adapter(fake: FakeXero, prefix: string, refresh: string, overrides: Parameters<typeof makeAdapter>[4] = {}, config: Parameters<typeof makeAdapter>[5] = {}): AdapterHandle {
    const h = makeAdapter(fake, redis.url, prefix, refresh, { limits: { perMinute: 1_000_000, perDay: 1_000_000 }, ...overrides }, config);
    onTestFinished(() => h.close());
    return h;
  }

  /** The refresh token stored for this fake's organisation, decrypted. */
  async function storedRefresh(fake: FakeXero, prefix: string): Promise<{ version: number; refresh: string; revoked: boolean } | undefined> {
    const stored = await new XeroTokenStore(client, prefix, fake.options.xeroTenantId).read();
    if (!stored) return undefined;
    return { version: stored.version, refresh: cipher.decrypt(stored.state.cur, `${fake.options.xeroTenantId}:refresh`), revoked: stored.state.revoked !== undefined };
  }

  function child(fake: FakeXero, prefix: string, refresh: string, mode: 'hammer' | 'crash', durationMs = 3000): XeroChild {
    const c = spawnXeroChild({
      mode,
      redisUrl: redis.url,
      prefix,
      tokenKey: TOKEN_KEY,
      clientId: fake.options.clientId,
      clientSecret: fake.options.clientSecret,
      refreshToken: refresh,
      xeroTenantId: fake.options.xeroTenantId,
      apiUrl: fake.apiUrl,
      tokenUrl: fake.tokenUrl,
      durationMs,
      // A killed child holds the refresh lock until its TTL: keep it short here (the token call's timeout shorter).
      lockTtlMs: 2_000,
      tokenTimeoutMs: 1_000,
    });
    onTestFinished(async () => {
      if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
      await c.exited;
    });
    return c;
  }

  it('commits the rotated refresh token before the new tokens are used', async () => {
    const fake = await fakeWith();
    const prefix = testPrefix('xero');
    const r1 = fake.issueRefreshToken();
    const seenInHook: { stored: string | undefined; apiCalls: number }[] = [];
    const h = adapter(fake, prefix, r1, {
      hooks: {
        afterTokenResponse: async () => {
          seenInHook.push({ stored: (await storedRefresh(fake, prefix))?.refresh, apiCalls: fake.requests.length });
        },
      },
    });
    await h.adapter.readPage('contacts', {});
    const r2 = fake.issuedRefresh.at(-1)!;
    // When Xero had answered, the old token was still the stored one and the new access token unused...
    expect(seenInHook).toEqual([{ stored: r1, apiCalls: 0 }]);
    // ...then the new refresh token was committed, and the next refresh sends exactly it.
    expect(await storedRefresh(fake, prefix)).toEqual({ version: 2, refresh: r2, revoked: false });
    fake.expireAccessTokens();
    await h.adapter.readPage('contacts', {});
    expect(fake.tokenCalls.map((c) => [c.token, c.outcome])).toEqual([[r1, 'issued'], [r2, 'issued']]);
  });

  it('never uses a rotated token it could not commit (lock lost): the old one is sent again within the grace', async () => {
    const fake = await fakeWith();
    const prefix = testPrefix('xero');
    const r1 = fake.issueRefreshToken();
    const lockKey = connectionKey(prefix, fake.options.xeroTenantId, 'xero', 'oauth-lock');
    let steal = true;
    let storedWhenStolen: string | undefined;
    const h = adapter(fake, prefix, r1, {
      hooks: {
        afterTokenResponse: async () => {
          if (!steal) return;
          steal = false;
          // Another process takes the lock (ours expired) between Xero's answer and our commit.
          await client.set(lockKey, 'another-owner', 'PX', 300);
          storedWhenStolen = (await storedRefresh(fake, prefix))?.refresh;
        },
      },
    });
    expect((await h.adapter.readPage('contacts', {})).records).toHaveLength(5);
    expect(storedWhenStolen).toBe(r1);
    const [lostAccess, usedAccess] = fake.issuedAccess;
    const lostRefresh = fake.issuedRefresh[1]!;
    // The uncommitted rotation was dropped: its refresh token never sent, its access token never used...
    expect(fake.usesOf(lostRefresh)).toBe(0);
    expect(fake.requests.map((r) => r.headers['authorization'])).toEqual([`Bearer ${usedAccess}`]);
    expect(lostAccess).not.toBe(usedAccess);
    // ...and the stored token was sent again, which Xero honours within the grace.
    expect(fake.tokenCalls.map((c) => [c.token, c.outcome])).toEqual([[r1, 'issued'], [r1, 'grace']]);
    expect((await storedRefresh(fake, prefix))?.refresh).toBe(fake.issuedRefresh.at(-1));
  });

  it('two processes (and the parent) hammering one connection never send the same refresh token twice', async () => {
    // Access tokens live 1 s (used for 750 ms), the token endpoint is slow: refreshes race all the time.
    const fake = await fakeWith({ accessTtlS: 1, tokenDelayMs: 40 });
    const prefix = testPrefix('xero');
    const r1 = fake.issueRefreshToken();
    const kids = [child(fake, prefix, r1, 'hammer', 4000), child(fake, prefix, r1, 'hammer', 4000)];
    await Promise.all(kids.map((k) => k.next('ready')));
    const parent = adapter(fake, prefix, r1);
    const until = Date.now() + 4000;
    kids.forEach((k) => k.go());
    let parentOk = 0;
    while (Date.now() < until) {
      await parent.adapter.readPage('contacts', { pageSize: 5 });
      parentOk += 1;
    }
    const summaries = await Promise.all(kids.map((k) => k.summary()));
    for (const s of summaries) {
      expect(s.errors).toEqual({});
      expect(s.ok).toBeGreaterThan(0);
    }
    expect(parentOk).toBeGreaterThan(0);
    const uses = [...fake.uses().values()];
    expect(uses.length).toBeGreaterThanOrEqual(3);
    expect(uses.every((n) => n === 1)).toBe(true);
    expect(fake.tokenCalls.every((c) => c.outcome === 'issued')).toBe(true);
    expect(fake.requests.every((r) => r.status === 200)).toBe(true);
  });

  it('recovers from a process killed between the token answer and the commit (within the grace)', async () => {
    const fake = await fakeWith();
    const prefix = testPrefix('xero');
    const r1 = fake.issueRefreshToken();
    const k = child(fake, prefix, r1, 'crash');
    await k.next('token-answered');
    expect((await k.exited).signal).toBe('SIGKILL');
    const lost = fake.issuedRefresh.at(-1)!;
    // Xero rotated, but the new token never reached Redis: the old one is still the stored one.
    expect(await storedRefresh(fake, prefix)).toEqual({ version: 1, refresh: r1, revoked: false });

    const h = adapter(fake, prefix, r1);
    expect((await h.adapter.readPage('contacts', {})).records).toHaveLength(5);
    expect(fake.tokenCalls.map((c) => [c.token, c.outcome])).toEqual([[r1, 'issued'], [r1, 'grace']]);
    expect(fake.usesOf(lost)).toBe(0);
    expect((await storedRefresh(fake, prefix))?.refresh).toBe(fake.issuedRefresh.at(-1));
  });

  it('after the grace, the connection is reported revoked with what to do, fails fast, and a new token restarts it', async () => {
    const fake = await fakeWith({ graceMs: 200 });
    const prefix = testPrefix('xero');
    const r1 = fake.issueRefreshToken();
    const crashing = adapter(fake, prefix, r1, { hooks: { afterTokenResponse: () => Promise.reject(new Error('simulated crash')) } });
    await expect(crashing.adapter.readPage('contacts', {})).rejects.toThrow('simulated crash');
    await new Promise((r) => setTimeout(r, 300));

    const h = adapter(fake, prefix, r1);
    const err = await h.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ code: 'PLATFORM_AUTH_FAILED', retryable: false });
    expect((err as Error).message).toMatch(/revoked or has expired.*Reconnect the app.*new refresh token in the tenants file/);
    expect((await storedRefresh(fake, prefix))?.revoked).toBe(true);
    // Every process now fails fast, without calling Xero again.
    const calls = fake.tokenCalls.length;
    const other = adapter(fake, prefix, r1);
    await expect(other.adapter.readPage('contacts', {})).rejects.toMatchObject({ code: 'PLATFORM_AUTH_FAILED' });
    expect(fake.tokenCalls).toHaveLength(calls);

    // The operator reconnects and puts the new refresh token in the tenants file.
    const fresh = fake.issueRefreshToken();
    const reconnected = adapter(fake, prefix, fresh);
    expect((await reconnected.adapter.readPage('contacts', {})).records).toHaveLength(5);
    expect(fake.tokenCalls.at(-1)).toMatchObject({ token: fresh, outcome: 'issued' });
    // A process still holding the old tenants file does not restart the chain from its stale token.
    const stale = adapter(fake, prefix, r1);
    fake.expireAccessTokens();
    expect((await stale.adapter.readPage('contacts', {})).records).toHaveLength(5);
    expect(fake.usesOf(r1)).toBe(2);
  });

  it('falls back to the previous refresh token when Xero refuses the stored one within the grace', async () => {
    const fake = await fakeWith();
    const prefix = testPrefix('xero');
    const r1 = fake.issueRefreshToken();
    const h = adapter(fake, prefix, r1);
    await h.adapter.readPage('contacts', {});
    const r2 = fake.issuedRefresh.at(-1)!;
    fake.revoke(r2);
    fake.expireAccessTokens();
    expect((await h.adapter.readPage('contacts', {})).records).toHaveLength(5);
    expect(fake.tokenCalls.map((c) => [c.token, c.outcome])).toEqual([[r1, 'issued'], [r2, 'invalid_grant'], [r1, 'grace']]);
  });

  it('a revoked connection and a wrong client secret are auth failures; only the first marks the connection', async () => {
    const fake = await fakeWith();
    const prefix = testPrefix('xero');
    const wrong = adapter(fake, prefix, fake.issueRefreshToken(), {}, { clientSecret: 'not-the-secret' });
    const err = await wrong.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PLATFORM_AUTH_FAILED', retryable: false });
    expect((err as Error).message).toMatch(/clientSecret/);
    expect((await storedRefresh(fake, prefix))?.revoked).toBe(false);

    const prefix2 = testPrefix('xero');
    const h = adapter(fake, prefix2, fake.issueRefreshToken());
    await h.adapter.readPage('contacts', {});
    fake.revokeAll();
    fake.expireAccessTokens();
    await expect(h.adapter.readPage('contacts', {})).rejects.toMatchObject({ code: 'PLATFORM_AUTH_FAILED' });
    expect((await storedRefresh(fake, prefix2))?.revoked).toBe(true);
  });

  it('keeps no raw token in Redis or in the logs', async () => {
    const fake = await fakeWith({ accessTtlS: 1 });
    const prefix = testPrefix('xero');
    const h = adapter(fake, prefix, fake.issueRefreshToken());
    for (let i = 0; i < 4; i++) {
      await h.adapter.readPage('contacts', {});
      fake.expireAccessTokens();
    }
    fake.revokeAll();
    await h.adapter.readPage('contacts', {}).catch(() => undefined);
    const tokens = [...fake.issuedRefresh, ...fake.issuedAccess];
    expect(fake.issuedAccess.length).toBeGreaterThanOrEqual(4);
    const stored = await dumpPrefix(client, prefix);
    expect(stored.some((s) => s.includes(':oauth'))).toBe(true);
    const leaks = stored.filter((s) => tokens.some((t) => s.includes(t) || s.includes(t.slice(3))));
    expect(leaks).toEqual([]);
    const logText = h.logs.join('');
    expect(logText).toContain('tokens rotated');
    expect(tokens.filter((t) => logText.includes(t.slice(3)))).toEqual([]);
    expect(logText).not.toContain(fake.options.clientSecret);
  });
});
