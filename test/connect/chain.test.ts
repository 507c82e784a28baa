/**
 * The token chain's first link from a code exchange (PlatformAuth.connect), and the pieces of a connect link:
 * a connect over a chain seeded from the tenants file is not undone by that seed (in this process or another);
 * a revoked chain is cleared by a connect; no chain and no file token is PLATFORM_NOT_CONNECTED; links and picks
 * verify only as themselves, unexpired, untampered.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Secret } from '../../src/secret.js';
import { parseTenants } from '../../src/config/tenants.js';
import { Hono } from 'hono';
import { Capabilities, Connect, mountConnectRoutes } from '../../src/connect/index.js';
import { capturingLogger } from '../platforms/xero/harness.js';
import { TokenCipher } from '../../src/platforms/oauth/cipher.js';
import { PlatformAuth } from '../../src/platforms/oauth/oauth.js';
import { xeroOAuth } from '../../src/platforms/xero/oauth.js';
import { PlatformNotConnectedError } from '../../src/platforms/types.js';
import { startTestRedis, testPrefix, type TestRedis } from '../helpers/redis.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { startFake, TOKEN_KEY } from '../platforms/xero/harness.js';

describe('PlatformAuth.connect: the first link of the chain from a code exchange', () => {
  let redis: TestRedis;
  let client: Redis;
  let fake: FakeXero;
  const agent = new Agent();
  const cipher = TokenCipher.fromText(TOKEN_KEY);
  const auth = (prefix: string, refreshToken?: string): PlatformAuth =>
    new PlatformAuth({
      platform: xeroOAuth.chain,
      redis: client,
      prefix,
      connection: fake.options.xeroTenantId,
      clientId: fake.options.clientId,
      clientSecret: new Secret(fake.options.clientSecret),
      ...(refreshToken ? { refreshToken: new Secret(refreshToken) } : {}),
      tokenUrl: fake.tokenUrl,
      cipher,
      dispatcher: agent,
      settings: { lockWaitMs: 2_000 },
    });

  beforeAll(async () => {
    redis = await startTestRedis();
    client = new Redis(redis.url);
    fake = await startFake();
  });
  afterAll(async () => {
    await agent.close();
    await fake?.close();
    client?.disconnect();
    await redis?.stop();
  });

  it('over a chain seeded from the tenants file: the seed does not restart it, here or in another process', async () => {
    const prefix = testPrefix('connect');
    const fileToken = fake.issueRefreshToken();
    const here = auth(prefix, fileToken);
    await here.accessToken();
    const grant = fake.issueGrant(1800);
    await here.connect(grant);
    expect((await here.accessToken()).token).toBe(grant.accessToken);
    // Another process, the same tenants file: its seed was counted as seen.
    const other = auth(prefix, fileToken);
    expect((await other.accessToken()).token).toBe(grant.accessToken);
    expect(fake.usesOf(grant.refreshToken)).toBe(0);
  });

  it('a revoked chain is cleared by a connect; without a chain or a file token it is not connected', async () => {
    const prefix = testPrefix('connect');
    const none = auth(prefix);
    await expect(none.accessToken()).rejects.toBeInstanceOf(PlatformNotConnectedError);
    const dead = fake.issueRefreshToken();
    fake.revoke(dead);
    const file = auth(prefix, dead);
    await expect(file.accessToken()).rejects.toMatchObject({ code: 'PLATFORM_AUTH_FAILED' });
    const grant = fake.issueGrant(1);
    await file.connect(grant);
    // The grant's access token lives 1 s (less the margin): the next token is a rotation of the grant's refresh token.
    await new Promise((r) => setTimeout(r, 1_100));
    await file.accessToken();
    expect(fake.usesOf(grant.refreshToken)).toBe(1);
    await file.disconnect();
    await expect(none.accessToken()).rejects.toBeInstanceOf(PlatformNotConnectedError);
  });
});

describe('connect links and picks', () => {
  const key = randomBytes(32).toString('base64');
  const caps = new Capabilities(key);

  it('verify only as themselves, unexpired, untampered, under the same key', () => {
    const { token } = caps.link('acme', 60_000);
    expect(caps.verifyLink(token)).toMatchObject({ k: 'link', t: 'acme' });
    expect(caps.verifyPick(token)).toBeUndefined();
    const pick = caps.pick('acme', 'grant1', 'org1', 60_000);
    expect(caps.verifyPick(pick)).toMatchObject({ t: 'acme', p: 'grant1', o: 'org1' });
    expect(caps.verifyLink(pick)).toBeUndefined();
    expect(new Capabilities(randomBytes(32).toString('base64')).verifyLink(token)).toBeUndefined();
    expect(new Capabilities(key, () => Date.now() + 61_000).verifyLink(token)).toBeUndefined();
    const [v, , mac] = token.split('.');
    const other = Buffer.from(JSON.stringify({ k: 'link', t: 'other', e: 9_999_999_999, n: 'x' })).toString('base64url');
    expect(caps.verifyLink(`${v}.${other}.${mac}`)).toBeUndefined();
    for (const junk of ['', 'v1..', 'v1.a.b', 'x'.repeat(5000)]) expect(caps.verifyLink(junk)).toBeUndefined();
  });
});

describe('the tenants file for connect links', () => {
  const file = (platform: Record<string, unknown>): string =>
    JSON.stringify({ tenants: [{ id: 'acme', collections: { clientId: 'c', clientSecret: 's' }, platform: { kind: 'xero', clientId: 'x', clientSecret: 'y', ...platform } }] });

  it('takes a xero tenant without refreshToken and xeroTenantId, with default scopes and addresses', () => {
    const p = parseTenants(file({})).tenants[0]!.platform;
    expect(p).toMatchObject({
      kind: 'xero',
      authorizeUrl: 'https://login.xero.com/identity/connect/authorize',
      connectionsUrl: 'https://api.xero.com/connections',
      scopes: ['offline_access', 'accounting.contacts.read', 'accounting.invoices.read', 'accounting.payments.read'],
    });
    expect(parseTenants(file({ scopes: 'offline_access  accounting.transactions.read' })).tenants[0]!.platform).toMatchObject({ scopes: ['offline_access', 'accounting.transactions.read'] });
  });

  it('guards the new addresses as the others: https, or http to this machine only', () => {
    expect(() => parseTenants(file({ authorizeUrl: 'http://login.example.com/authorize' }))).toThrow(/authorizeUrl: must be https/);
    expect(() => parseTenants(file({ connectionsUrl: 'http://10.0.0.1/connections' }))).toThrow(/connectionsUrl: must be https/);
    expect(parseTenants(file({ authorizeUrl: 'http://127.0.0.1:9/authorize' })).tenants[0]!.platform).toMatchObject({ authorizeUrl: 'http://127.0.0.1:9/authorize' });
  });
});

describe('the connect routes when Redis is away', () => {
  it('answer a plain 503 page and log the route, never the link', async () => {
    const tenants = parseTenants(JSON.stringify({ tenants: [{ id: 'acme', collections: { clientId: 'c', clientSecret: 's' }, platform: { kind: 'xero', clientId: 'x', clientSecret: 'y' } }] }));
    const redis = new Redis('redis://127.0.0.1:1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    const { logger, logs } = capturingLogger();
    const connect = new Connect({ redis, prefix: '{t}', tokenKey: TOKEN_KEY, publicUrl: 'https://connect.example.com', tenant: (id) => tenants.tenants.find((t) => t.id === id), tenants: () => tenants.tenants, requestFullSync: async () => undefined, logger });
    const app = new Hono();
    mountConnectRoutes(app as never, { connect, ratePerMin: 100, logger }, () => new Response('401', { status: 401 }));
    // A link that verifies: whether it is outstanding is a Redis read, which fails.
    const { token } = new Capabilities(TOKEN_KEY).link('acme', 60_000);
    const res = await app.request(`/connect/${token}`, {}, { incoming: { socket: { remoteAddress: '127.0.0.1' } } });
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('Please open the link again');
    expect(logs.join('')).toContain('connect: request failed');
    expect(logs.join('')).not.toContain(token);
    await connect.close();
    redis.disconnect();
  });
});
