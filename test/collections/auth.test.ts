/** Tokens: requestToken, the 401 path through a TokenProvider, and no token or secret in errors or logs. */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { Secret } from '../../src/secret.js';
import { createLogger } from '../../src/logger.js';
import { AuthError, CollectionsError, TransientError, errorCode } from '../../src/collections/errors.js';
import { FixedTokenProvider, StaticTokenProvider } from '../../src/collections/static-token-provider.js';
import { jwtExpiryMs, requestToken } from '../../src/collections/token.js';
import { caught, CLIENT_ID, CLIENT_SECRET, count, memoryStream, useFixture, type Fixture } from './fixture.js';

let f!: Fixture;
useFixture((x) => (f = x));

async function rawToken(): Promise<string> {
  const res = await fetch(`${f.sim.authUrl}/auth/v1/api-key/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('requestToken', () => {
  it('returns the token and its expiry from the exp claim', async () => {
    f.sim.setTokenLifetime(120_000);
    const before = Date.now();
    const t = await requestToken({ authUrl: f.sim.authUrl, clientId: CLIENT_ID, clientSecret: new Secret(CLIENT_SECRET) }).finally(() => f.sim.setTokenLifetime(300_000));
    expect(t.accessToken.split('.')).toHaveLength(3);
    expect(t.expiresAtMs).toBe(jwtExpiryMs(t.accessToken));
    expect(t.expiresAtMs!).toBeGreaterThan(before + 100_000);
    expect(t.expiresAtMs!).toBeLessThanOrEqual(Date.now() + 120_000);
  });

  it('a wrong secret is AUTH_CREDENTIALS_REJECTED and the secret appears nowhere in the error', async () => {
    const wrong = 'wrong-secret-7f3a9c';
    const err = await caught(requestToken({ authUrl: f.sim.authUrl, clientId: CLIENT_ID, clientSecret: new Secret(wrong) }));
    expect(err).toBeInstanceOf(CollectionsError);
    expect(errorCode(err)).toBe('AUTH_CREDENTIALS_REJECTED');
    expect((err as CollectionsError).retryable).toBe(false);
    expect((err as CollectionsError).status).toBe(401);
    for (const text of [(err as Error).message, JSON.stringify(err), inspect(err, { depth: 5 }), String((err as Error).stack)]) {
      expect(text).not.toContain(wrong);
      expect(text).not.toContain(CLIENT_SECRET);
    }
  });

  it('an unreachable token endpoint is transient', async () => {
    const err = await caught(requestToken({ authUrl: 'http://127.0.0.1:1', clientId: CLIENT_ID, clientSecret: new Secret(CLIENT_SECRET), timeoutMs: 2_000 }));
    expect(err).toBeInstanceOf(TransientError);
  });
});

describe('401 handling', () => {
  it('recovers from a superseded token: reports it to the provider, which fetches a new one', async () => {
    await f.client.listContacts({ size: 1 }); // the provider holds a token now
    const issuedBefore = f.tokens.tokensIssued;
    await rawToken(); // supersedes it
    f.sim.resetCounters();
    const page = await f.client.listContacts({ size: 1 });
    expect(page.page).toBe(1);
    expect(count(f.sim, 'GET /contact', '401')).toBe(1);
    expect(count(f.sim, 'GET /contact', '200')).toBe(1);
    expect(f.sim.counters().unauthorized.superseded).toBe(1);
    expect(f.tokens.tokensIssued).toBe(issuedBefore + 1);
  });

  it('a burst of 401s with the same token makes one refresh (compare-and-refresh in process)', async () => {
    await f.client.listContacts({ size: 1 });
    const issuedBefore = f.tokens.tokensIssued;
    await rawToken();
    await Promise.all(Array.from({ length: 5 }, () => f.client.listContacts({ size: 1 })));
    expect(f.tokens.tokensIssued).toBe(issuedBefore + 1);
  });

  it('a token that keeps failing ends in AuthError after two re-sends', async () => {
    const c = f.makeClient({ tokens: new FixedTokenProvider('not-a-jwt') });
    const err = await caught(c.listContacts());
    expect(err).toBeInstanceOf(AuthError);
    expect(errorCode(err)).toBe('AUTH_INVALID');
    expect((err as AuthError).reason).toBe('invalid');
    expect(count(f.sim, 'GET /contact', '401')).toBe(3);
  });

  it('a token that expired on the way is re-sent with a newer one more than twice, within the deadline', async () => {
    // Four tokens that expire before they are used (a stalled process), then a good one: each 401 `expired` is
    // reported and the request sent again; two re-sends (the limit for other reasons) would have failed it.
    f.sim.setTokenLifetime(1);
    const stale = await Promise.all(Array.from({ length: 4 }, () => rawToken())).finally(() => f.sim.setTokenLifetime(300_000));
    await new Promise((r) => setTimeout(r, 1_100));
    const good = await rawToken();
    const handed: string[] = [];
    const tokens = {
      async acquire() {
        const token = stale[handed.length] ?? good;
        handed.push(token);
        return { token, version: handed.length, release: async () => undefined };
      },
      async rejected() {},
    };
    const c = f.makeClient({ tokens });
    const page = await c.listContacts({ size: 1 });
    expect(page.page).toBe(1);
    expect(count(f.sim, 'GET /contact', '401')).toBe(4);
    expect(f.sim.counters().unauthorized.expired).toBe(4);
    expect(handed).toHaveLength(5);
  });

  it('an expired token is refreshed before use from its exp claim', async () => {
    // Inside the margin from the start, yet alive long enough for a request on a loaded machine (at 1 s one expired in
    // flight once: a 401 and a third token).
    f.sim.setTokenLifetime(4_000);
    const tokens = new StaticTokenProvider({ authUrl: f.sim.authUrl, clientId: CLIENT_ID, clientSecret: new Secret(CLIENT_SECRET), marginMs: 10_000 });
    const c = f.makeClient({ tokens });
    try {
      await c.listContacts({ size: 1 });
      await c.listContacts({ size: 1 });
    } finally {
      f.sim.setTokenLifetime(300_000);
    }
    // Each acquire saw a token inside the margin, so each fetched a new one; the service never said 401.
    expect(tokens.tokensIssued).toBe(2);
    expect(count(f.sim, 'GET /contact', '401')).toBe(0);
  });
});

describe('logging', () => {
  it('logs each request at debug level without the Authorization header, the token or bodies', async () => {
    await f.client.listContacts({ size: 1 }); // the shared provider's token may have been superseded by an earlier test
    const out = memoryStream();
    const logger = createLogger({ level: 'debug', destination: out.stream });
    const c = f.makeClient({ logger });
    await c.createContact({ name: 'Logged', email: 'logged@example.test' });
    await rawToken(); // next request: 401, refresh, retry
    await c.listContacts({ size: 1 });
    const token = (await f.tokens.acquire()).token;
    const text = out.text();
    const lines = text.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l['msg'] === 'collections request').map((l) => [l['route'], l['status']])).toEqual([
      ['POST /contact', 200],
      ['GET /contact', 401],
      ['GET /contact', 200],
    ]);
    expect(text.toLowerCase()).not.toContain('authorization');
    expect(text).not.toContain('Bearer');
    expect(text).not.toContain(token);
    expect(text).not.toMatch(/eyJ[\w-]+\.[\w-]+\./);
    expect(text).not.toContain('logged@example.test');
  });
});
