/**
 * Security review, finding 2: the OAuth `state` is bound to the browser that opened the link. Whoever holds a link
 * opens it, and sends the genuine consent URL it leads to to a victim: the victim's browser lands on the callback
 * without the link holder's cookie and gets the public server's 401; nothing is bound. The browser that opened the
 * link connects as before; the cookie is HttpOnly, SameSite=Lax, and `__Host-`, Secure when PUBLIC_URL is https.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { startFake, TOKEN_KEY } from '../platforms/xero/harness.js';
import { Browser, freePort, linkOf } from './browser.js';

const ONE = '{"type":"about:blank","title":"Unauthorized","status":401,"detail":"unauthorized"}';

describe('the OAuth state is bound to the browser that opened the link', () => {
  let redis: TestRedis;
  let fake: FakeXero;
  let rig: Rig;
  let publicUrl: string;
  const bound = async (tenant: string): Promise<string | undefined> => (await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).get(tenant))?.connection;

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    fake = await startFake();
    fake.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: fake.options.xeroTenantId, name: 'Victim Ltd' }] });
    const platform = { kind: 'xero', clientId: fake.options.clientId, clientSecret: fake.options.clientSecret, apiUrl: fake.apiUrl, tokenUrl: fake.tokenUrl, authorizeUrl: fake.authorizeUrl, connectionsUrl: fake.connectionsUrl };
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'kiwi', platform }],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
    await redis?.stop();
  });

  it("the consent URL sent to another browser: its callback gets the one 401 and binds nothing", async () => {
    const holder = new Browser();
    const link = await linkOf(rig, 'kiwi');
    const opened = await holder.fetch(link.url);
    expect(opened.status).toBe(302);
    const consent = opened.headers.get('location')!;
    expect(consent.startsWith(fake.authorizeUrl)).toBe(true);

    const victim = new Browser();
    const visit = await victim.browse(consent);
    expect(visit.hops.map((h) => h.status)).toEqual([302, 401]);
    expect(new URL(visit.url).pathname).toBe('/oauth/callback');
    expect(visit.text).toBe(ONE);
    expect(await bound('kiwi')).toBeUndefined();
    expect(fake.oauth!.exchanges).toEqual([]);
  });

  it('the browser that opened the link connects; its cookie is HttpOnly and SameSite=Lax', async () => {
    const customer = new Browser();
    const link = await linkOf(rig, 'kiwi');
    const opened = await customer.fetch(link.url);
    const cookie = opened.headers.getSetCookie().join('\n');
    expect(cookie).toMatch(/^cs_connect=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax$/);
    const visit = await customer.browse(opened.headers.get('location')!);
    expect(visit.status).toBe(200);
    expect(visit.text).toContain('<strong>Victim Ltd</strong> is connected');
    expect(await bound('kiwi')).toBe(fake.options.xeroTenantId);
  });

  it('a callback with another browser\'s cookie is refused as one without', async () => {
    const other = new Browser();
    const link = await linkOf(rig, 'kiwi', { reconnect: true });
    await other.fetch((await linkOf(rig, 'kiwi', { reconnect: true })).url);
    const holder = new Browser();
    const consent = (await holder.fetch(link.url)).headers.get('location')!;
    const callback = (await fetch(consent, { redirect: 'manual' })).headers.get('location')!;
    // The callback's query with the other browser's cookie.
    const res = await other.fetch(callback);
    expect(res.status).toBe(401);
    expect(await res.text()).toBe(ONE);
  });
});

describe('the browser cookie when PUBLIC_URL is https', () => {
  let redis: TestRedis;
  let rig: Rig;

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'kiwi', platform: { kind: 'xero', clientId: 'XEROCLIENT', clientSecret: 'xero-secret', authorizeUrl: 'https://login.xero.example/authorize' } }],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: 'https://connect.example.com', WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1' },
      worker: { opsPort: 0, schedules: false },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await redis?.stop();
  });

  it('is __Host-, Secure, HttpOnly, SameSite=Lax, Path=/', async () => {
    const link = await linkOf(rig, 'kiwi');
    const port = rig.env.WEBHOOK_PORT!;
    const res = await fetch(link.url.replace('https://connect.example.com', `http://127.0.0.1:${port}`), { redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.getSetCookie()).toEqual([expect.stringMatching(/^__Host-cs_connect=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/)]);
  });
});
