/**
 * End to end, QuickBooks (issue 30): a connect link through Intuit's consent double (no PKCE: Intuit's web apps use
 * their secret) to the callback, whose realmId binds the company, and a first full run landing records; a company
 * other than the tenants file's is refused; an expired code (the exchange refused) changes nothing.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeConnection } from '../../src/connect/index.js';
import { BindingStore } from '../../src/platforms/oauth/binding.js';
import { PlatformTokenStore } from '../../src/platforms/oauth/token-store.js';
import { waitForRun } from '../../src/state/index.js';
import { QuickBooksOAuthDouble } from '../doubles/quickbooks-oauth.js';
import { startTestRedis, type TestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { QboDouble } from '../platforms/quickbooks/double.js';
import { customer, invoice } from '../platforms/quickbooks/fixtures.js';
import { TOKEN_KEY } from '../platforms/xero/harness.js';
import { browse, Browser, freePort, linkOf } from './browser.js';

const VERIFIER = 'verifier-token-of-the-app';

describe('connecting a QuickBooks company with a connect link', () => {
  let redis: TestRedis;
  let qbo: QboDouble;
  let intuit: QuickBooksOAuthDouble;
  let rig: Rig;
  let publicUrl: string;
  const link = async (tenant: string, reconnect = false): Promise<string> => (await linkOf(rig, tenant, { reconnect })).url;
  const bindings = (): BindingStore => new BindingStore(rig.app.redis, rig.env.KEY_PREFIX);

  beforeAll(async () => {
    redis = await startTestRedis();
    const port = await freePort();
    publicUrl = `http://127.0.0.1:${port}`;
    qbo = await QboDouble.start({ tokens: [] });
    intuit = await QuickBooksOAuthDouble.start({ clientId: 'ABqbo-client-1', clientSecret: 'qbo-secret-1', realmId: qbo.realmId, onAccess: (t) => qbo.acceptToken(t) });
    intuit.enableConnect({ redirectUri: `${publicUrl}/oauth/callback` });
    let t = Date.now() - 3_600_000;
    for (const id of ['1', '2', '3']) qbo.put('Customer', customer(id), (t += 1000));
    for (const cid of ['1', '2']) qbo.put('Invoice', invoice(String(1000 + Number(cid)), cid), (t += 1000));
    const platform = { kind: 'quickbooks', webhookVerifierToken: VERIFIER, clientId: intuit.options.clientId, clientSecret: intuit.options.clientSecret, environment: 'sandbox', apiUrl: qbo.apiUrl, tokenUrl: intuit.tokenUrl, authorizeUrl: intuit.authorizeUrl, revokeUrl: intuit.revokeUrl };
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'maple', platform },
        { id: 'pinned', platform: { ...platform, realmId: '4620816365999999999' } },
      ],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, PUBLIC_URL: publicUrl, WEBHOOK_PORT: String(port), WEBHOOK_HOST: '127.0.0.1', SYNC_PAGE_SIZE: '10' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await intuit?.close();
    await qbo?.close();
    await redis?.stop();
  });

  it('from the link to a first full run: the realmId of the callback bound, no PKCE sent', async () => {
    const before = Date.now();
    const visit = await browse(await link('maple'));
    expect(visit.hops.map((h) => h.status)).toEqual([302, 302, 200]);
    const authorize = new URL(visit.hops[1]!.url);
    expect(authorize.searchParams.get('scope')).toBe('com.intuit.quickbooks.accounting');
    expect(authorize.searchParams.has('code_challenge')).toBe(false);
    expect(visit.text).toContain('is connected');
    expect(await bindings().get('maple')).toMatchObject({ platform: 'quickbooks', connection: qbo.realmId });
    expect((await new PlatformTokenStore(rig.app.redis, rig.env.KEY_PREFIX, 'quickbooks', qbo.realmId).read())?.state.connectedAt).toBeGreaterThanOrEqual(before);
    const run = await waitForRun(rig.app.stores.runs, 'maple', { mode: 'full', requestedAt: before, timeoutMs: 60_000 });
    expect(run.outcome).toBe('succeeded');
    expect(rig.sim.data('client-maple').contacts).toHaveLength(3);
    // A change notification for the bound realm (not in the tenants file) reaches the tenant.
    const body = JSON.stringify({ eventNotifications: [{ realmId: qbo.realmId, dataChangeEvent: { entities: [{ name: 'Customer', id: '1', operation: 'Update' }] } }] });
    const signature = createHmac('sha256', VERIFIER).update(body).digest('base64');
    const notified = await fetch(`${publicUrl}/webhooks/quickbooks`, { method: 'POST', headers: { 'content-type': 'application/json', 'intuit-signature': signature }, body });
    expect(notified.status).toBe(200);
    expect(rig.logs.some((l) => l.includes('"tenant":"maple"') && l.includes('incremental run requested'))).toBe(true);
    const everything = [...rig.logs, visit.text].join('\n');
    for (const token of [...intuit.issuedRefresh, ...intuit.issuedAccess]) expect(everything).not.toContain(token);
  });

  it("a company other than the tenants file's realmId: refused with a page, nothing stored", async () => {
    const visit = await browse(await link('pinned'));
    expect(visit.status).toBe(400);
    expect(visit.text).toContain('a different QuickBooks company');
    expect(await bindings().get('pinned')).toBeUndefined();
    expect(await new PlatformTokenStore(rig.app.redis, rig.env.KEY_PREFIX, 'quickbooks', '4620816365999999999').read()).toBeUndefined();
  });

  it('a code already exchanged (invalid_grant): a plain page with the platform request id logged', async () => {
    const first = await browse(await link('pinned'));
    const code = new URL(first.hops[2]!.url).searchParams.get('code')!;
    // A fresh state (a link opened again), with the code already exchanged in its callback: the exchange is refused.
    const browser = new Browser();
    const start = await browser.fetch(await link('pinned'));
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;
    const replay = await browser.browse(`${publicUrl}/oauth/callback?code=${code}&state=${state}&realmId=4620816365999999999`);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('expired before it could be used');
    expect(rig.logs.some((l) => l.includes('"reason":"invalid_grant"') && l.includes('"requestId":"1-'))).toBe(true);
  });

  it('revoke: Intuit told at its revoke endpoint, the chain and the binding deleted', async () => {
    const outcome = await revokeConnection({ redis: rig.app.redis, prefix: rig.env.KEY_PREFIX, tokenKey: TOKEN_KEY, tenants: rig.app.tenants(), logger: rig.app.logger }, 'maple');
    expect(outcome).toEqual({ tenant: 'maple', connection: qbo.realmId, platform: 'revoked', chainDeleted: true, linksRevoked: 0 });
    expect(intuit.oauth!.revocations).toEqual(['grant']);
    expect(await bindings().get('maple')).toBeUndefined();
    expect(await new PlatformTokenStore(rig.app.redis, rig.env.KEY_PREFIX, 'quickbooks', qbo.realmId).read()).toBeUndefined();
    expect((await rig.sync('maple', 'full')).outcome).toBe('waiting');
  });
});
