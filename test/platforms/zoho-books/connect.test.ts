/**
 * End to end, Zoho Books: a connect link through the double's consent at the main accounts server, the callback
 * naming the user's data centre (`location=eu`, `accounts-server`), the code exchanged at that data centre, the
 * organization bound from GET /organizations at the token answer's api_domain, and a first full run landing records
 * in the collections simulator; a foreign `accounts-server` refused before anything is sent to it; revoke at the
 * data centre.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeConnection } from '../../../src/connect/index.js';
import { closeServer } from '../../../src/http-server.js';
import { BindingStore } from '../../../src/platforms/oauth/binding.js';
import { PlatformTokenStore } from '../../../src/platforms/oauth/token-store.js';
import { waitForRun } from '../../../src/state/index.js';
import { browse, freePort, linkOf } from '../../connect/browser.js';
import { startTestRedis, type TestRedis } from '../../helpers/redis.js';
import { startRig, type Rig } from '../../helpers/rig.js';
import { dumpPrefix, TOKEN_KEY } from '../xero/harness.js';
import { FakeZoho } from './fake-zoho.js';
import { contact, invoice, payment } from './fixtures.js';

const T0 = Date.parse('2026-10-01T05:00:00Z');
const ORG = '10234695';

describe('connecting a Zoho Books organization with a connect link', () => {
  let redis: TestRedis;
  let zoho: FakeZoho;
  let foreign: Server;
  let foreignUrl: string;
  const foreignRequests: string[] = [];
  let rig: Rig;
  let publicUrl: string;
  const bindings = (): BindingStore => new BindingStore(rig.app.redis, rig.env.KEY_PREFIX);

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    zoho = await FakeZoho.start({ clientId: '1000.ZOHOAPP', clientSecret: 'zoho-secret-1', organizations: [{ organization_id: ORG, name: 'Riyadh Trading Co.' }], userDc: 'eu', redirectUri: `${publicUrl}/oauth/callback` });
    for (let i = 1; i <= 6; i += 1) zoho.data.contacts.push(contact(`C${i}`, T0 + i * 1000, { outstanding_receivable_amount: i % 2 === 0 ? 100 : 0 }));
    for (let i = 1; i <= 6; i += 1) zoho.data.invoices.push(invoice(`I${i}`, `C${i}`, T0 + 10_000 + i * 1000, i === 6 ? { status: 'draft' } : {}));
    zoho.data.customerpayments.push(payment('P1', 'C1', T0 + 30_000, { I1: 250 }));
    // Another server, standing for an attacker's "accounts server": it must never be called.
    foreign = createServer((req, res) => {
      foreignRequests.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"x","refresh_token":"y","expires_in":3600}');
    });
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    foreignUrl = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
    const platform = { kind: 'zoho-books', clientId: '1000.ZOHOAPP', clientSecret: 'zoho-secret-1', accountsUrl: zoho.accounts('com') };
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'riyadh', platform },
        { id: 'jeddah', platform: { ...platform, organizationId: '99999999' } },
      ],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', SYNC_PAGE_SIZE: '50' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await zoho?.close();
    if (foreign) await closeServer(foreign);
    await redis?.stop();
  });

  it('a foreign accounts-server in the callback is refused with a page, and nothing (least of all the secret) is sent to it', async () => {
    zoho.callbackServer = foreignUrl;
    try {
      const visit = await browse((await linkOf(rig, 'jeddah')).url);
      expect(visit.status).toBe(400);
      expect(foreignRequests).toEqual([]);
      expect(zoho.tokenCalls).toEqual([]);
      expect(await bindings().get('jeddah')).toBeUndefined();
      expect(rig.logs.some((l) => l.includes('"tenant":"jeddah"') && l.includes('"reason":"untrusted_accounts_server"'))).toBe(true);
    } finally {
      zoho.callbackServer = undefined;
    }
  });

  it('from the link to a first full run: consent at the main accounts server, the code exchanged at the eu data centre, the organization bound', async () => {
    const before = Date.now();
    const visit = await browse((await linkOf(rig, 'riyadh')).url);
    expect(visit.hops.map((h) => h.status)).toEqual([302, 302, 200]);
    const authorize = new URL(visit.hops[1]!.url);
    expect(authorize.origin + authorize.pathname).toBe(`${zoho.accounts('com')}/oauth/v2/auth`);
    expect(authorize.searchParams.get('scope')).toBe('ZohoBooks.contacts.READ,ZohoBooks.invoices.READ,ZohoBooks.customerpayments.READ,ZohoBooks.settings.READ');
    expect(authorize.searchParams.get('access_type')).toBe('offline');
    const callback = new URL(visit.hops[2]!.url);
    expect(callback.searchParams.get('location')).toBe('eu');
    expect(callback.searchParams.get('accounts-server')).toBe(zoho.accounts('eu'));
    expect(visit.text).toContain('Riyadh Trading Co.');
    expect(zoho.tokenCalls).toEqual([{ dc: 'eu', grant: 'authorization_code', outcome: 'issued', clientSecretIn: 'form' }]);
    expect(await bindings().get('riyadh')).toMatchObject({ platform: 'zoho-books', connection: ORG, name: 'Riyadh Trading Co.', extra: { 'accounts-server': zoho.accounts('eu'), api_domain: zoho.apiDomain('eu'), location: 'eu' } });
    expect((await new PlatformTokenStore(rig.app.redis, rig.env.KEY_PREFIX, 'zoho-books', ORG).read())?.state.connectedAt).toBeGreaterThanOrEqual(before);

    const run = await waitForRun(rig.app.stores.runs, 'riyadh', { mode: 'full', requestedAt: before, timeoutMs: 60_000 });
    expect(run.outcome).toBe('succeeded');
    const landed = rig.sim.data('client-riyadh');
    expect(landed.contacts).toHaveLength(6);
    // The draft is not pushed.
    expect(landed.invoices).toHaveLength(5);
    // Every API call went to the eu data centre's API domain.
    expect(new Set(zoho.requests.map((r) => r.dc))).toEqual(new Set(['eu']));
    const everything = [...rig.logs, visit.text, ...(await dumpPrefix(rig.app.redis, rig.env.KEY_PREFIX))].join('\n');
    for (const t of [...zoho.issuedRefresh, ...zoho.issuedAccess]) expect(everything).not.toContain(t);
    expect(everything).not.toContain('zoho-secret-1');
  });

  it("the tenants file's organization missing from the grant: refused with a page saying so", async () => {
    const visit = await browse((await linkOf(rig, 'jeddah')).url);
    expect(visit.status).toBe(400);
    expect(visit.text).toContain('does not have the Zoho Books organization this link is for');
    expect(await bindings().get('jeddah')).toBeUndefined();
  });

  it('revoke: the refresh token revoked at the eu accounts server, the chain and the binding deleted', async () => {
    const outcome = await revokeConnection({ redis: rig.app.redis, prefix: rig.env.KEY_PREFIX, tokenKey: TOKEN_KEY, tenants: rig.app.tenants(), logger: rig.app.logger }, 'riyadh');
    expect(outcome).toMatchObject({ tenant: 'riyadh', connection: ORG, platform: 'revoked', chainDeleted: true });
    expect(zoho.revocations).toEqual([{ dc: 'eu', outcome: 'revoked' }]);
    expect(await bindings().get('riyadh')).toBeUndefined();
    expect((await rig.sync('riyadh', 'full')).outcome).toBe('waiting');
  });
});
