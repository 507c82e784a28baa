/**
 * End to end, Xero (issue 30): a connect link opened in a "browser" (fetch, following redirects) through the fake
 * Xero's consent screen and the callback, to a first full run that lands records in the simulator; and the
 * refusals: a reused state, an expired link, a tampered (another tenant's) link, denied consent, an organisation the
 * grant lacks, several organisations (picked once).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Capabilities } from '../../src/connect/index.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { XeroTokenStore } from '../../src/platforms/oauth/token-store.js';
import { waitForRun } from '../../src/state/index.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import type { FakeXero } from '../platforms/xero/fake-xero.js';
import { buildContacts, buildInvoices } from '../platforms/xero/fixtures.js';
import { dumpPrefix, startFake, TOKEN_KEY } from '../platforms/xero/harness.js';
import { browse, Browser, freePort, linkOf } from './browser.js';

const T0 = Date.parse('2026-03-01T08:00:00Z');

describe('connecting a Xero organisation with a connect link', () => {
  let redis: TestRedis;
  let fake: FakeXero;
  let multi: FakeXero;
  let rig: Rig;
  let publicUrl: string;
  /** A link for the tenant (a reconnect link: kiwi is connected by the second test). */
  const link = async (tenant: string, reconnect = false): Promise<string> => (await linkOf(rig, tenant, { reconnect })).url;
  const bindings = (): BindingStore => new BindingStore(rig.app.redis, rig.env.KEY_PREFIX);
  const platformOf = (f: FakeXero, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    kind: 'xero',
    clientId: f.options.clientId,
    clientSecret: f.options.clientSecret,
    apiUrl: f.apiUrl,
    tokenUrl: f.tokenUrl,
    authorizeUrl: f.authorizeUrl,
    connectionsUrl: f.connectionsUrl,
    ...extra,
  });

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    fake = await startFake();
    const contacts = buildContacts(12, { startMs: T0 });
    fake.data.Contacts = contacts;
    fake.data.Invoices = buildInvoices(contacts, 2, { startMs: T0 });
    fake.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: fake.options.xeroTenantId, name: 'Kiwi & Co <Ltd>' }] });
    multi = await startFake({ clientId: 'XEROCLIENT2', clientSecret: 'xero-secret-2' });
    multi.enableConnect({ redirectUri: `${publicUrl}/oauth/callback`, organisations: [{ tenantId: randomUUID(), name: 'North Ltd' }, { tenantId: randomUUID(), name: 'South Ltd' }] });
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'kiwi', platform: platformOf(fake) },
        { id: 'fixed', platform: platformOf(fake, { xeroTenantId: randomUUID() }) },
        { id: 'multi', platform: platformOf(multi) },
      ],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', SYNC_PAGE_SIZE: '50' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
    await multi?.close();
    await redis?.stop();
  });

  it('before any connection, runs end "waiting for connection" (not failed) and are not retried', async () => {
    for (const tenant of ['multi', 'fixed']) {
      const run = await rig.sync(tenant, 'full');
      expect(run.outcome).toBe('waiting');
      expect(run.errors.join(' ')).toContain('not connected yet');
    }
    const failed = await rig.app.queues.sync.getJobCounts('failed', 'delayed', 'waiting');
    expect(failed).toEqual({ failed: 0, delayed: 0, waiting: 0 });
  });

  it('from the link to a first full run landing records: PKCE, one organisation bound, the chain started', async () => {
    const before = Date.now();
    const visit = await browse(await link('kiwi'));
    expect(visit.hops.map((h) => h.status)).toEqual([302, 302, 200]);
    const authorize = new URL(visit.hops[1]!.url);
    expect(authorize.origin + authorize.pathname).toBe(fake.authorizeUrl);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${publicUrl}/oauth/callback`);
    expect(authorize.searchParams.get('scope')).toBe('offline_access accounting.contacts.read accounting.invoices.read accounting.payments.read');
    expect(visit.text).toContain('Kiwi &#38; Co &#60;Ltd&#62; is connected'.replace(' is', '</strong> is').replace('Kiwi', '<strong>Kiwi'));
    expect(fake.oauth!.exchanges).toEqual([{ outcome: 'issued' }]);
    const bound = await bindings().get('kiwi');
    expect(bound).toMatchObject({ platform: 'xero', connection: fake.options.xeroTenantId, name: 'Kiwi & Co <Ltd>' });
    const chain = await new XeroTokenStore(rig.app.redis, rig.env.KEY_PREFIX, fake.options.xeroTenantId).read();
    expect(chain?.state.connectedAt).toBeGreaterThanOrEqual(before);

    const run = await waitForRun(rig.app.stores.runs, 'kiwi', { mode: 'full', requestedAt: before, timeoutMs: 60_000 });
    expect(run.outcome).toBe('succeeded');
    expect(run.trigger).toBe('connect');
    expect(rig.sim.data('client-kiwi').contacts).toHaveLength(12);
    expect(rig.sim.data('client-kiwi').invoices.length).toBeGreaterThan(0);
    const gauge = await rig.metrics.registry.getSingleMetricAsString('collections_sync_connection_state');
    expect(gauge).toContain('collections_sync_connection_state{tenant="kiwi",state="connected"} 1');
    expect(gauge).toContain('collections_sync_connection_state{tenant="fixed",state="awaiting_connection"} 1');
    expect(gauge).toContain('collections_sync_connection_state{tenant="kiwi",state="needs_reconnect"} 0');

    // Nothing secret in logs, pages or Redis in clear: no refresh or access token, no code.
    const everything = [...rig.logs, visit.text, ...(await dumpPrefix(rig.app.redis, rig.env.KEY_PREFIX))].join('\n');
    for (const t of [...fake.issuedRefresh, ...fake.issuedAccess]) expect(everything).not.toContain(t);
    const code = new URL(visit.hops[2]!.url).searchParams.get('code')!;
    expect(rig.logs.join('\n')).not.toContain(code);
  });

  it('a reused state (the callback opened again) gets the one 401 and changes nothing', async () => {
    const browser = new Browser();
    const visit = await browser.browse(await link('kiwi', true));
    const callback = visit.hops[2]!.url;
    const chain = await new XeroTokenStore(rig.app.redis, rig.env.KEY_PREFIX, fake.options.xeroTenantId).read();
    // The same browser (its cookie is right): only the state is spent.
    const again = await browser.fetch(callback);
    expect(again.status).toBe(401);
    expect(await again.text()).toBe('{"type":"about:blank","title":"Unauthorized","status":401,"detail":"unauthorized"}');
    expect((await new XeroTokenStore(rig.app.redis, rig.env.KEY_PREFIX, fake.options.xeroTenantId).read())?.version).toBe(chain?.version);
  });

  it('an expired link, a tampered (other tenant) link, an unknown tenant, no state: the same 401', async () => {
    const oneHourAgo = new Capabilities(TOKEN_KEY, () => Date.now() - 3_600_000);
    const expired = `${publicUrl}/connect/${oneHourAgo.link('kiwi', 60_000).token}`;
    const [v, payload, mac] = (await link('kiwi', true)).split('/connect/')[1]!.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = Buffer.from(JSON.stringify({ ...claims, t: 'multi' })).toString('base64url');
    const unknown = new Capabilities(TOKEN_KEY).link('nobody', 60_000).token;
    const answers = await Promise.all(
      [expired, `${publicUrl}/connect/${v}.${forged}.${mac}`, `${publicUrl}/connect/${unknown}`, `${publicUrl}/oauth/callback?code=x&state=nope`, `${publicUrl}/oauth/callback`].map(async (u) => {
        const r = await fetch(u, { redirect: 'manual' });
        return `${r.status} ${await r.text()}`;
      }),
    );
    expect(new Set(answers)).toEqual(new Set(['401 {"type":"about:blank","title":"Unauthorized","status":401,"detail":"unauthorized"}']));
  });

  it('denied consent: a plain page, a log line, nothing stored', async () => {
    fake.oauth!.deny();
    const visit = await browse(await link('fixed'));
    expect(visit.status).toBe(400);
    expect(visit.text).toContain('The connection was not allowed in Xero.');
    expect(await bindings().get('fixed')).toBeUndefined();
    expect(rig.logs.some((l) => l.includes('"tenant":"fixed"') && l.includes('"reason":"access_denied"'))).toBe(true);
  });

  it("the tenants file's organisation missing from the grant: refused with a page saying so", async () => {
    const visit = await browse(await link('fixed'));
    expect(visit.status).toBe(400);
    expect(visit.text).toContain('does not include the Xero organisation this link is for');
    expect(await bindings().get('fixed')).toBeUndefined();
  });

  it('several organisations: a page of signed picks; a pick binds once', async () => {
    const browser = new Browser();
    const visit = await browser.browse(await link('multi'));
    expect(visit.status).toBe(200);
    const picks = [...visit.text.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&#38;/g, '&'));
    expect(picks).toHaveLength(2);
    expect(visit.text).toContain('North Ltd');
    const chosen = await browser.browse(picks[1]!);
    expect(chosen.status).toBe(200);
    expect(chosen.text).toContain('South Ltd');
    expect(await bindings().get('multi')).toMatchObject({ connection: multi.oauth!.options.organisations![1]!.tenantId, name: 'South Ltd' });
    const again = await browser.fetch(picks[0]!);
    expect(again.status).toBe(401);
  });
});
