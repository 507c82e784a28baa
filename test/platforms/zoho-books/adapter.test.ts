/**
 * The zoho-books adapter as the worker builds it (createAdapter from a tenants file) on the real token chain and
 * limiter in Redis, against the Zoho double over HTTP: paging and Zoho's time format, payments from their details,
 * contact persons from contacts' details, the token endpoint's quirks (`invalid_code` at HTTP 200, too many
 * refreshes), 401 code 57, 429 code 45, and a deletion found by the reconcile check.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseTenants } from '../../../src/config/tenants.js';
import { connectionStates } from '../../../src/connect/status.js';
import { createAdapter, type PlatformAdapter } from '../../../src/platforms/index.js';
import { PlatformTokenStore } from '../../../src/platforms/oauth/token-store.js';
import { PlatformError, PlatformRateLimitedError } from '../../../src/platforms/types.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import { capturingLogger, readAll } from '../xero/harness.js';
import { FakeZoho, zohoStamp } from './fake-zoho.js';
import { contact, invoice, payment, SAMPLES } from './fixtures.js';

const TOKEN_KEY = randomBytes(32).toString('hex');
const T0 = Date.parse('2026-10-01T05:00:00Z');
const ORG = '10234695';

describe('zoho-books adapter on the real OAuth room and limiter', () => {
  const redis = useTestRedis();

  async function setUp(options: { perMinute?: number } = {}): Promise<{ zoho: FakeZoho; prefix: string; refresh: string; adapter: (refresh?: string) => { adapter: PlatformAdapter; logs: string[] } }> {
    const zoho = await FakeZoho.start({ clientId: '1000.ZOHOAPP', clientSecret: 'zoho-secret-1', organizations: [{ organization_id: ORG, name: 'Riyadh Trading Co.' }], userDc: 'eu', ...options });
    onTestFinished(() => zoho.close());
    const prefix = testPrefix('zoho');
    const refresh = zoho.issueRefreshToken('eu');
    const adapter = (token = refresh): { adapter: PlatformAdapter; logs: string[] } => {
      const platform = { kind: 'zoho-books', clientId: '1000.ZOHOAPP', clientSecret: '${ZOHO_SECRET}', dataCenter: 'eu', organizationId: ORG, refreshToken: token, accountsUrl: zoho.accounts('eu') };
      const file = parseTenants(JSON.stringify({ tenants: [{ id: 'riyadh', collections: { clientId: 'c', clientSecret: 's' }, platform }] }), { ZOHO_SECRET: 'zoho-secret-1' });
      const conn = new Redis(redis.url, { maxRetriesPerRequest: 3 });
      const { logger, logs } = capturingLogger();
      const a = createAdapter(file.tenants[0]!.platform, { logger, redis: conn, prefix, tokenKey: TOKEN_KEY, auth: { lockWaitMs: 5_000 } });
      onTestFinished(async () => {
        await a.close?.();
        conn.disconnect();
      });
      return { adapter: a, logs };
    };
    return { zoho, prefix, refresh, adapter };
  }

  it('pages through 450 invoices 200 at a time, reads +0300 stamps as UTC, and sends the Zoho-oauthtoken and organization_id on every call', async () => {
    const { zoho, adapter } = await setUp();
    for (let i = 0; i < 450; i += 1) zoho.data.invoices.push(invoice(`9${String(i).padStart(4, '0')}`, 'C1', T0 + i * 1000));
    const { adapter: a } = adapter();
    const all = await readAll(a, 'invoices', { pageSize: 200 });
    expect(all.bad).toEqual([]);
    expect(all.records).toHaveLength(450);
    expect(new Set(all.records.map((r) => r.id)).size).toBe(450);
    // Three listing pages; the reconcile check after a since-less listing reads Redis only (every invoice was seen).
    expect(zoho.requests.filter((r) => r.path === '/invoices')).toHaveLength(3);
    expect(zoho.requests.filter((r) => r.path.startsWith('/invoices/'))).toHaveLength(0);
    // 2026-10-01T08:00:00+0300 is 05:00 UTC.
    expect(all.records[0]).toMatchObject({ id: '90000', updatedAt: '2026-10-01T05:00:00.000Z', status: 'AUTHORISED', outstandingAmount: 1000, contactId: 'C1' });
    const calls = zoho.requests.filter((r) => r.path === '/invoices');
    expect(calls.every((r) => r.query['organization_id'] === ORG && r.query['per_page'] === '200' && r.query['sort_column'] === 'last_modified_time' && /^Zoho-oauthtoken 1000\./.test(r.authorization ?? ''))).toBe(true);
    // Keyset: the second page asks again from one second before the last stamp, in Zoho's own format.
    expect(calls[1]!.query['last_modified_time']).toBe('2026-10-01T05:03:18+0000');
    // One refresh for the whole listing, sent to the data centre with the secret in the form.
    expect(zoho.tokenCalls).toEqual([{ dc: 'eu', grant: 'refresh_token', outcome: 'issued', clientSecretIn: 'form' }]);
  });

  it('incremental: last_modified_time from `since`, records before it left out; statuses mapped (draft, void, paid) and an unknown one a bad record', async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.invoices.push(
      invoice('1', 'C1', T0, { status: 'sent' }),
      invoice('2', 'C1', T0 + 60_000, { status: 'draft', due_date: '' }),
      invoice('3', 'C1', T0 + 120_000, { status: 'void', balance: 1000 }),
      invoice('4', 'C1', T0 + 180_000, { status: 'paid', balance: 0 }),
      invoice('5', 'C1', T0 + 240_000, { status: 'partially_paid', balance: 400 }),
      invoice('6', 'C1', T0 + 300_000, { status: 'teleported' }),
      invoice('7', 'C1', T0 + 360_000, { last_modified_time: '2026-10-01 08:10' }),
    );
    const { adapter: a } = adapter();
    const page = await a.readPage('invoices', { since: { updatedAt: new Date(T0 + 60_000).toISOString(), id: '' } });
    expect(zoho.requests.at(-1)!.query['last_modified_time']).toBe('2026-10-01T05:01:00+0000');
    expect(page.records.map((r) => [r.id, r.status, r.outstandingAmount])).toEqual([
      ['2', 'DRAFT', 1000],
      ['3', 'VOIDED', 0],
      ['4', 'PAID', 0],
      ['5', 'AUTHORISED', 400],
    ]);
    expect(page.bad.map((b) => [b.platformId, b.place, b.reason])).toEqual([
      ['6', 'zoho-books:invoices page 1 #5', 'status teleported is not one this adapter knows'],
      ['7', 'zoho-books:invoices page 1 #6', 'last_modified_time is not a Zoho timestamp'],
    ]);
  });

  it('contacts: inactive ones listed too (a deletion), vendors not customers, persons only from the detail of customers owing, within the budget', async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.contacts.push(
      contact('C1', T0),
      contact('C2', T0 + 1000, { status: 'inactive', outstanding_receivable_amount: 0 }),
      contact('V1', T0 + 2000, { contact_type: 'vendor', outstanding_receivable_amount: 0 }),
      contact('C3', T0 + 3000, { outstanding_receivable_amount: 0 }),
    );
    const { adapter: a } = adapter();
    const page = await a.readPage('contacts', {});
    expect(zoho.requests.find((r) => r.path === '/contacts')!.query['filter_by']).toBe('Status.All');
    const byId = new Map(page.records.map((r) => [r.id, r]));
    expect(byId.get('C1')).toMatchObject({ name: 'Customer C1', companyId: ORG, phoneNumber: '+966 50 123 4567', deleted: false, customer: true, persons: [{ id: '460000000026053', name: 'Noura Al-Harbi', email: 'noura@riyadh-trading.example', phoneNumber: '+966 55 765 4321' }] });
    expect(byId.get('C2')).toMatchObject({ deleted: true });
    expect(byId.get('V1')).toMatchObject({ customer: false });
    expect(byId.get('C3')!.persons).toBeUndefined();
    expect(zoho.requests.filter((r) => r.path.startsWith('/contacts/')).map((r) => r.path)).toEqual(['/contacts/C1']);
    // The Arabic name as written (as the other platforms), from the sample.
    const arabic = await a.readContacts!([String(SAMPLES.contact['contact_id'])]);
    expect(arabic.records).toEqual([]);
    zoho.data.contacts.push(SAMPLES.contact);
    expect((await a.readContacts!(['460000000026049'])).records[0]).toMatchObject({ name: 'شركة الرياض للتجارة', updatedAt: '2026-10-01T05:10:00.000Z' });
  });

  it("payments: one record per invoice a payment's detail applies it to; a line dropped later is yielded deleted", async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.customerpayments.push(payment('P1', 'C1', T0, { I1: 350, I2: 100 }));
    const { adapter: a } = adapter();
    const first = await a.readPage('payments', {});
    expect(first.records.map((r) => [r.id, r.invoiceId, r.amount, r.deleted])).toEqual([
      ['P1:I1', 'I1', 350, false],
      ['P1:I2', 'I2', 100, false],
    ]);
    zoho.data.customerpayments[0] = payment('P1', 'C1', T0 + 60_000, { I1: 450 });
    const second = await a.readPage('payments', {});
    expect(second.records.map((r) => [r.id, r.amount, r.deleted])).toEqual([
      ['P1:I2', 100, true],
      ['P1:I1', 450, false],
    ]);
  });

  it('payments are listed 25 a page: a page and its details stay well within a minute of the limit, so a run limited mid-listing goes on from its last page', async () => {
    const { zoho, adapter } = await setUp();
    for (let i = 0; i < 60; i += 1) zoho.data.customerpayments.push(payment(`P${i}`, 'C1', T0 + i * 1_000, { I1: 10 }));
    const { adapter: a } = adapter();
    const before = zoho.requests.length;
    const first = await a.readPage('payments', { pageSize: 200 });
    const sent = zoho.requests.slice(before).filter((r) => r.path.includes('customerpayments'));
    expect(sent.filter((r) => !/customerpayments\/./.test(r.path)).map((r) => r.query['per_page'])).toEqual(['25']);
    expect(sent.length, 'one listing and a detail per payment').toBe(26);
    expect(first.records).toHaveLength(25);
    expect(first.nextPageToken).toBeDefined();
    let page = first;
    const ids = new Set(first.records.map((r) => r.id));
    while (page.nextPageToken !== undefined) {
      page = await a.readPage('payments', { pageSize: 200, pageToken: page.nextPageToken });
      for (const r of page.records) ids.add(r.id);
    }
    expect(ids.size, 'every payment once').toBe(60);
  });

  it('a deletion found by the reconcile pass: a remembered invoice the listing lacks answers 404 code 1002 and is yielded deleted', async () => {
    const { zoho, adapter } = await setUp();
    for (let i = 1; i <= 5; i += 1) zoho.data.invoices.push(invoice(`I${i}`, 'C1', T0 + i * 1000));
    const { adapter: a } = adapter();
    expect((await readAll(a, 'invoices')).records).toHaveLength(5);
    zoho.data.invoices.splice(2, 1); // I3 deleted in Zoho
    const reconcile = await readAll(a, 'invoices');
    const gone = reconcile.records.filter((r) => r.deleted);
    expect(gone).toEqual([expect.objectContaining({ id: 'I3', deleted: true, status: 'VOIDED', outstandingAmount: 0, number: 'INV-I3', contactId: 'C1' })]);
    expect(zoho.requests.filter((r) => r.path.startsWith('/invoices/')).map((r) => [r.path, r.status])).toEqual([['/invoices/I3', 404]]);
    // Forgotten once yielded: the next pass does not ask again.
    await readAll(a, 'invoices');
    expect(zoho.requests.filter((r) => r.path.startsWith('/invoices/'))).toHaveLength(1);
  });

  it('401 code 57: the token is refreshed once and the call repeated', async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.invoices.push(invoice('I1', 'C1', T0));
    const { adapter: a } = adapter();
    await a.readPage('invoices', {});
    zoho.expireAccessTokens();
    const page = await a.readPage('invoices', {});
    expect(page.records).toHaveLength(1);
    expect(zoho.requests.filter((r) => r.status === 401)).toHaveLength(1);
    expect(zoho.tokenCalls.map((c) => c.outcome)).toEqual(['issued', 'issued']);
  });

  it('invalid_code (HTTP 200) from the token endpoint: needs_reconnect at once, no retries, every process fails fast', async () => {
    const { zoho, adapter, prefix, refresh } = await setUp();
    zoho.data.invoices.push(invoice('I1', 'C1', T0));
    // 20 more connections of the same user and app: the 21st pushed this one's refresh token out.
    for (let i = 0; i < 20; i += 1) zoho.issueRefreshToken('eu');
    expect(zoho.isRevoked(refresh)).toBe(true);
    const { adapter: a } = adapter();
    const err = await a.readPage('invoices', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).code).toBe('PLATFORM_AUTH_FAILED');
    expect((err as PlatformError).message).toContain('invalid_code');
    expect(zoho.tokenCalls.map((c) => c.outcome)).toEqual(['invalid_code']);
    const { adapter: b } = adapter();
    await expect(b.readPage('invoices', {})).rejects.toThrow(/revoked or has expired/);
    expect(zoho.tokenCalls).toHaveLength(1);
    const chain = await new PlatformTokenStore(new Redis(redis.url), prefix, 'zoho-books', ORG).read();
    expect(chain?.state.revoked?.reason).toBe('invalid_code');
    const platform = { kind: 'zoho-books', clientId: '1000.ZOHOAPP', clientSecret: 'zoho-secret-1', organizationId: ORG, refreshToken: refresh, accountsUrl: zoho.accounts('eu') };
    const tenants = parseTenants(JSON.stringify({ tenants: [{ id: 'riyadh', collections: { clientId: 'c', clientSecret: 's' }, platform }] }), {}).tenants;
    const conn = new Redis(redis.url);
    onTestFinished(() => void conn.disconnect());
    expect((await connectionStates(conn, prefix, tenants))[0]).toMatchObject({ state: 'needs_reconnect', reason: expect.stringContaining('invalid_code') as unknown });
  });

  it('too many refreshes: processes share one access token (one refresh for many), and a refused refresh is retryable, not a reconnect', async () => {
    const { zoho, adapter, prefix } = await setUp();
    zoho.data.invoices.push(invoice('I1', 'C1', T0));
    const processes = Array.from({ length: 12 }, () => adapter().adapter);
    await Promise.all(processes.map((a) => a.readPage('invoices', {})));
    expect(zoho.tokenCalls.filter((c) => c.grant === 'refresh_token')).toHaveLength(1);
    // Ten more refreshes of the same refresh token in ten minutes (each after every access token was dropped): the 11th is refused.
    for (let i = 0; i < 9; i += 1) {
      zoho.expireAccessTokens();
      await processes[i]!.readPage('invoices', {});
    }
    zoho.expireAccessTokens();
    const err = await processes[11]!.readPage('invoices', {}).catch((e: unknown) => e);
    expect(zoho.tokenCalls.filter((c) => c.outcome === 'too_many').length).toBeGreaterThan(0);
    expect(err).toBeInstanceOf(PlatformError);
    expect((err as PlatformError).retryable).toBe(true);
    expect((err as PlatformError).message).toMatch(/token endpoint answered 400/);
    const chain = await new PlatformTokenStore(new Redis(redis.url), prefix, 'zoho-books', ORG).read();
    expect(chain?.state.revoked).toBeUndefined();
  });

  it('429 code 45: every process waits the minute, without calling Zoho again', async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.invoices.push(invoice('I1', 'C1', T0));
    const { adapter: a } = adapter();
    const { adapter: b } = adapter();
    zoho.fault({ path: '/invoices', status: 429, body: SAMPLES.errors['rate_minute'] });
    const err = await a.readPage('invoices', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformRateLimitedError);
    expect((err as PlatformRateLimitedError).scope).toBe('minute');
    expect((err as PlatformRateLimitedError).retryAfterMs).toBeGreaterThan(50_000);
    const calls = zoho.requests.length;
    const other = await b.readPage('invoices', {}).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(PlatformRateLimitedError);
    expect(zoho.requests.length).toBe(calls);
  });

  it("the plan's daily limit: a spent X-Rate-Limit-Remaining pauses the tenant's runs with the reason (a day-scoped limit)", async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.invoices.push(invoice('I1', 'C1', T0));
    const { adapter: a } = adapter();
    zoho.fault({ path: '/invoices', status: 200, body: { code: 0, message: 'success', invoices: [], page_context: { page: 1, per_page: 200, has_more_page: false } }, headers: { 'X-Rate-Limit-Limit': '1000', 'X-Rate-Limit-Remaining': '0', 'X-Rate-Limit-Reset': '3600' } });
    await a.readPage('invoices', {});
    const err = await a.readPage('invoices', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformRateLimitedError);
    expect((err as PlatformRateLimitedError).scope).toBe('day');
    expect((err as PlatformRateLimitedError).message).toContain('daily');
  });

  it('no token in any log line', async () => {
    const { zoho, adapter } = await setUp();
    zoho.data.invoices.push(invoice('I1', 'C1', T0));
    const { adapter: a, logs } = adapter();
    await a.readPage('invoices', {});
    zoho.expireAccessTokens();
    await a.readPage('invoices', {});
    const text = logs.join('\n');
    for (const t of [...zoho.issuedRefresh, ...zoho.issuedAccess]) expect(text).not.toContain(t);
    expect(text).not.toContain('zoho-secret-1');
    expect(zohoStamp(T0)).toBe('2026-10-01T08:00:00+0300');
  });
});
