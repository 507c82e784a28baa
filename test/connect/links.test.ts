/**
 * Security review, finding 1: a connect link is spent once it has connected, and a connected tenant moves to another
 * organisation only by a link asked for as a reconnect. Kiwi's grant covers two organisations (the customer picks):
 * a link connects org-2; opened again it gets the public server's 401 and no consent screen; a link made before the
 * connection stops working once it connected; a plain link for a connected tenant is refused when it is made; a
 * reconnect link moves kiwi to org-1 once (a second completion of it is refused, the old organisation's chain goes);
 * an outstanding link revoked by its id is refused.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LinkRefusedError, LinkStore } from '../../src/connect/index.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { XeroTokenStore } from '../../src/platforms/oauth/token-store.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { startFake, TOKEN_KEY } from '../platforms/xero/harness.js';
import { Browser, freePort, linkOf, type Visit } from './browser.js';

const ONE = '{"type":"about:blank","title":"Unauthorized","status":401,"detail":"unauthorized"}';

describe('a connect link is spent once it has connected', () => {
  let redis: TestRedis;
  let fake: FakeXero;
  let rig: Rig;
  let publicUrl: string;
  const org1 = randomUUID();
  const org2 = randomUUID();
  const bound = async (): Promise<string | undefined> => (await new BindingStore(rig.app.redis, rig.env.KEY_PREFIX).get('kiwi'))?.connection;
  const chainOf = (org: string) => new XeroTokenStore(rig.app.redis, rig.env.KEY_PREFIX, org).read();
  /** The organisation picker's links by name. */
  const picks = (page: Visit): Map<string, string> => new Map([...page.text.matchAll(/<a href="([^"]+)">([^<]+)<\/a>/g)].map((m) => [m[2]!, m[1]!.replace(/&#38;/g, '&')]));
  /** Opens `url` without following it: the status and body of the first answer. */
  const open = async (url: string): Promise<{ status: number; text: string }> => {
    const res = await fetch(url, { redirect: 'manual' });
    return { status: res.status, text: await res.text() };
  };

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    fake = await startFake();
    fake.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: org1, name: 'Org One' }, { tenantId: org2, name: 'Org Two' }] });
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'kiwi', platform: { kind: 'xero', clientId: fake.options.clientId, clientSecret: fake.options.clientSecret, apiUrl: fake.apiUrl, tokenUrl: fake.tokenUrl, authorizeUrl: fake.authorizeUrl, connectionsUrl: fake.connectionsUrl } }],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
    await redis?.stop();
  });

  it('opened again after it connected: the one 401, no consent screen; a link made before the connection stops working too', async () => {
    const link = await linkOf(rig, 'kiwi');
    const earlier = await linkOf(rig, 'kiwi');
    expect((await new LinkStore(rig.app.redis, rig.env.KEY_PREFIX).list('kiwi')).map((l) => l.id).sort()).toEqual([link.id, earlier.id].sort());
    const browser = new Browser();
    const first = await browser.browse(link.url);
    expect((await browser.browse(picks(first).get('Org Two')!)).text).toContain('is connected');
    expect(await bound()).toBe(org2);
    const consents = fake.oauth!.consents.length;

    for (const url of [link.url, earlier.url]) expect(await open(url)).toEqual({ status: 401, text: ONE });
    expect(fake.oauth!.consents).toHaveLength(consents);
    expect(await bound()).toBe(org2);
    // The spent link is no longer outstanding; the earlier one still is (revocable), but opens nothing.
    expect((await new LinkStore(rig.app.redis, rig.env.KEY_PREFIX).list('kiwi')).map((l) => l.id)).toEqual([earlier.id]);
  });

  it('a link for a connected tenant is refused unless asked for as a reconnect, which moves it once', async () => {
    await expect(linkOf(rig, 'kiwi')).rejects.toBeInstanceOf(LinkRefusedError);
    const reconnect = await linkOf(rig, 'kiwi', { reconnect: true });
    expect(reconnect.reconnect).toBe(true);
    // Opened twice before either completes (two tabs): the first completion moves kiwi to org-1, the second is refused.
    const browser = new Browser();
    const [one, two] = [await browser.browse(reconnect.url), await browser.browse(reconnect.url)];
    const moved = await browser.browse(picks(one).get('Org One')!);
    expect(moved.text).toContain('<strong>Org One</strong> is connected');
    expect(await bound()).toBe(org1);
    expect(await chainOf(org2)).toBeUndefined();
    const late = await browser.browse(picks(two).get('Org Two')!);
    expect(late.status).toBe(400);
    expect(late.text).toContain('This link was already used, or withdrawn');
    expect(await bound()).toBe(org1);
    expect(await chainOf(org1)).toBeDefined();
    expect(await open(reconnect.url)).toEqual({ status: 401, text: ONE });
    expect(rig.logs.some((l) => l.includes('"reason":"link_spent"'))).toBe(true);
  });

  it('an outstanding link revoked by its id is refused; a second revoke finds nothing', async () => {
    const link = await linkOf(rig, 'kiwi', { reconnect: true });
    const store = new LinkStore(rig.app.redis, rig.env.KEY_PREFIX);
    expect(await store.revoke('kiwi', link.id)).toBe(true);
    expect(await open(link.url)).toEqual({ status: 401, text: ONE });
    expect(await store.revoke('kiwi', link.id)).toBe(false);
    expect((await store.list('kiwi')).map((l) => l.id)).not.toContain(link.id);
    // No link (its signed token) is in a log line; its id is.
    expect(rig.logs.join('\n')).not.toContain(link.url.split('/connect/')[1]!);
  });
});
