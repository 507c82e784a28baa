import { Redis } from 'ioredis';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../../src/logger.js';
import { createAdapter } from '../../../src/platforms/index.js';
import { PlatformError, PlatformRateLimitedError } from '../../../src/platforms/types.js';
import { parseTenants } from '../../../src/config/tenants.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import type { FakeXero } from './fake-xero.js';
import { buildContacts, buildInvoices, buildPayments, msDate } from './fixtures.js';
import { makeAdapter, readAll, startFake, type AdapterHandle } from './harness.js';

const T0 = Date.parse('2026-03-01T08:00:00Z');

describe('the Xero adapter reads Xero listings', () => {
  const redis = useTestRedis();

  async function setup(fakeOptions: Parameters<typeof startFake>[0] = {}, adapterOverrides: Parameters<typeof makeAdapter>[4] = {}): Promise<{ fake: FakeXero; h: AdapterHandle; prefix: string; refresh: string }> {
    const fake = await startFake(fakeOptions);
    const prefix = testPrefix('xero');
    const refresh = fake.issueRefreshToken();
    const h = makeAdapter(fake, redis.url, prefix, refresh, adapterOverrides);
    onTestFinished(() => fake.close());
    onTestFinished(() => h.close());
    return { fake, h, prefix, refresh };
  }

  it('pages through every contact once, with the parameters and headers the specification names', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(250, { startMs: T0 });
    fake.data.Contacts[7]!['ContactStatus'] = 'ARCHIVED';
    const all = await readAll(h.adapter, 'contacts', { pageSize: 100 });
    const ids = all.records.map((r) => r.id);
    expect(new Set(ids).size).toBe(250);
    expect(ids).toHaveLength(250);
    expect(all.bad).toEqual([]);
    expect(all.records.find((r) => r.id === fake.data.Contacts[7]!['ContactID'])?.deleted).toBe(true);
    expect(all.records.every((r) => r.companyId === fake.options.xeroTenantId)).toBe(true);
    expect(fake.violations).toEqual([]);
    const calls = fake.apiCalls('/Contacts');
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const c of calls) {
      expect(c.headers['xero-tenant-id']).toBe(fake.options.xeroTenantId);
      expect(c.headers['authorization']).toMatch(/^Bearer at-/);
      expect(c.query).toMatchObject({ includeArchived: 'true', order: 'UpdatedDateUTC ASC', pageSize: '100' });
    }
    // Pages after the first ask again from one second before the last stamp seen (keyset), not page 2, 3.
    expect(calls[1]!.query['page']).toBe('1');
    expect(calls[1]!.headers['if-modified-since']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
  });

  it('reads contacts by id (IDs, in chunks), archived and non-customers included, whatever their stamps', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(130, { startMs: T0 });
    const wanted = fake.data.Contacts.filter((_, i) => i % 2 === 1).map((c) => c['ContactID'] as string);
    fake.data.Contacts[1]!['ContactStatus'] = 'ARCHIVED';
    fake.data.Contacts[3]!['IsCustomer'] = false;
    delete fake.data.Contacts[5]!['Name'];
    const page = await h.adapter.readContacts([...wanted, wanted[0]!, 'c0ffee00-0000-4000-8000-000000000000']);
    expect(page.records.map((r) => r.id).sort()).toEqual(wanted.filter((id) => id !== wanted[2]).sort());
    expect(page.bad).toEqual([{ entity: 'contacts', place: 'xero:Contacts by id', platformId: wanted[2], reason: 'name: required' }]);
    expect(page.records.find((r) => r.id === wanted[0])?.deleted).toBe(true);
    expect(page.records.find((r) => r.id === wanted[1])?.customer).toBe(false);
    expect(page.nextPageToken).toBeUndefined();
    const calls = fake.apiCalls('/Contacts');
    expect(calls.map((c) => c.query['IDs']?.split(',').length)).toEqual([50, 16]);
    for (const c of calls) {
      expect(c.query).toMatchObject({ includeArchived: 'true' });
      expect(c.headers['if-modified-since']).toBeUndefined();
    }
    expect(fake.violations).toEqual([]);
    expect((await h.adapter.readContacts([])).records).toEqual([]);
  });

  it('loses nothing when records on pages already read are updated mid-listing (moving sort order)', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(300, { startMs: T0 });
    const all = await readAll(h.adapter, 'contacts', {
      pageSize: 100,
      between: (page) => {
        if (page !== 1) return;
        // Ten records of page 1 change now: they move to the end of the UpdatedDateUTC order.
        for (let i = 0; i < 10; i++) fake.data.Contacts[i * 3]!['UpdatedDateUTC'] = msDate(T0 + 10_000_000 + i);
      },
    });
    const ids = new Set(all.records.map((r) => r.id));
    expect(ids.size).toBe(300);
  });

  it('pages by offset through a burst of records sharing one second', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(230, { startMs: T0, stepMs: 0 });
    const all = await readAll(h.adapter, 'contacts', { pageSize: 100 });
    expect(all.records).toHaveLength(230);
    expect(new Set(all.records.map((r) => r.id)).size).toBe(230);
    expect(fake.apiCalls('/Contacts').map((c) => c.query['page'])).toEqual(['1', '2', '3']);
  });

  it('sends If-Modified-Since at second precision from `since` and yields nothing older', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(50, { startMs: T0 });
    const since = { updatedAt: new Date(T0 + 20_500).toISOString(), id: '' };
    const all = await readAll(h.adapter, 'contacts', { since });
    expect(fake.apiCalls('/Contacts')[0]!.headers['if-modified-since']).toBe(new Date(T0 + 20_000).toISOString().replace('.000Z', 'Z'));
    // Records stamped T0 + 21 s .. T0 + 49 s.
    expect(all.records.map((r) => r.updatedAt)).toEqual(Array.from({ length: 29 }, (_, i) => new Date(T0 + (21 + i) * 1000).toISOString()));
  });

  it('reads receivable invoices only (where Type=="ACCREC") and payments on them, with bad records placed', async () => {
    const { fake, h } = await setup();
    const contacts = buildContacts(10, { startMs: T0 });
    fake.data.Invoices = buildInvoices(contacts, 3, { startMs: T0 });
    fake.data.Invoices[4]!['Contact'] = {};
    fake.data.Payments = [...buildPayments(fake.data.Invoices, { startMs: T0 }), { ...buildPayments(fake.data.Invoices, { startMs: T0 })[0]!, PaymentID: 'p-bill', PaymentType: 'ACCPAYPAYMENT', Invoice: { Type: 'ACCPAY', InvoiceID: 'x' } }];
    const inv = await readAll(h.adapter, 'invoices', { pageSize: 4 });
    const receivable = fake.data.Invoices.filter((i) => i['Type'] === 'ACCREC');
    expect(inv.records.length + inv.bad.length).toBe(receivable.length);
    expect(inv.bad).toEqual([{ entity: 'invoices', place: 'xero:Invoices page 1 #4', platformId: fake.data.Invoices[4]!['InvoiceID'], reason: 'contactId: required' }]);
    expect(fake.apiCalls('/Invoices').every((c) => c.query['where'] === 'Type=="ACCREC"')).toBe(true);
    const pay = await readAll(h.adapter, 'payments');
    expect(pay.records.map((p) => p.invoiceId).sort()).toEqual(fake.data.Invoices.filter((i) => i['Type'] === 'ACCREC' && i['Status'] === 'PAID').map((i) => i['InvoiceID']).sort());
    expect(pay.records.every((p) => p.paymentUuid === undefined)).toBe(true);
    expect(fake.violations).toEqual([]);
  });

  it('a 429 minute limit gives a minute PlatformRateLimitedError with Retry-After, shared with other processes', async () => {
    const { fake, h, prefix, refresh } = await setup();
    fake.data.Contacts = buildContacts(5, { startMs: T0 });
    await h.adapter.readPage('contacts', {});
    fake.fault({ status: 429, headers: { 'retry-after': '3', 'x-rate-limit-problem': 'minute' } });
    const err = await h.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformRateLimitedError);
    expect(err).toMatchObject({ scope: 'minute', retryAfterMs: 3000, code: 'PLATFORM_RATE_LIMITED' });
    // Another process (its own Redis connection) stops too, without calling Xero.
    const other = makeAdapter(fake, redis.url, prefix, refresh);
    onTestFinished(() => other.close());
    const before = fake.requests.length;
    const err2 = await other.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err2).toMatchObject({ scope: 'minute' });
    expect((err2 as PlatformRateLimitedError).retryAfterMs).toBeLessThanOrEqual(3000);
    expect(fake.requests.length).toBe(before);
  });

  it('a 429 daily limit gives a day PlatformRateLimitedError; concurrent and app limits keep their scope', async () => {
    const { fake, h } = await setup();
    fake.fault({ status: 429, headers: { 'retry-after': '5400', 'x-rate-limit-problem': 'day' } });
    await expect(h.adapter.readPage('invoices', {})).rejects.toMatchObject({ scope: 'day', retryAfterMs: 5_400_000 });

    const second = await setup();
    second.fake.fault({ status: 429, headers: { 'retry-after': '1', 'x-rate-limit-problem': 'concurrent' } });
    await expect(second.h.adapter.readPage('invoices', {})).rejects.toMatchObject({ scope: 'concurrent', retryAfterMs: 1000 });

    const third = await setup();
    third.fake.fault({ status: 429, headers: { 'retry-after': '7', 'x-rate-limit-problem': 'appminute' } });
    await expect(third.h.adapter.readPage('invoices', {})).rejects.toMatchObject({ scope: 'app', retryAfterMs: 7000 });
  });

  it('keeps to the per-minute limit before Xero has to say so, and stops when X-MinLimit-Remaining reaches 0', async () => {
    const { fake, h } = await setup({}, { limits: { perMinute: 4 } });
    for (let i = 0; i < 4; i++) await h.adapter.readPage('contacts', {});
    const err = await h.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ scope: 'minute' });
    expect((err as PlatformRateLimitedError).retryAfterMs).toBeGreaterThan(50_000);
    expect(fake.apiCalls()).toHaveLength(4);

    const tight = await setup({ perMinute: 2 });
    await tight.h.adapter.readPage('contacts', {});
    await tight.h.adapter.readPage('contacts', {});
    await expect(tight.h.adapter.readPage('contacts', {})).rejects.toMatchObject({ scope: 'minute' });
    expect(tight.fake.apiCalls()).toHaveLength(2);
    expect(tight.fake.apiCalls().map((c) => c.status)).toEqual([200, 200]);
  });

  it('stops at the daily count and when X-DayLimit-Remaining reaches 0', async () => {
    const { fake, h } = await setup({}, { limits: { perDay: 2 } });
    await h.adapter.readPage('payments', {});
    await h.adapter.readPage('payments', {});
    await expect(h.adapter.readPage('payments', {})).rejects.toMatchObject({ scope: 'day' });
    expect(fake.apiCalls()).toHaveLength(2);

    const tight = await setup({ perDay: 1 });
    await tight.h.adapter.readPage('payments', {});
    await expect(tight.h.adapter.readPage('payments', {})).rejects.toMatchObject({ scope: 'day' });
    expect(tight.fake.apiCalls()).toHaveLength(1);
  });

  it('never has more than 5 calls in flight per organisation across processes', async () => {
    const { fake, h, prefix, refresh } = await setup({ apiDelayMs: 150 });
    const other = makeAdapter(fake, redis.url, prefix, refresh);
    onTestFinished(() => other.close());
    fake.data.Contacts = buildContacts(5, { startMs: T0 });
    const reads = Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? h : other).adapter.readPage('contacts', {}));
    const pages = await Promise.all(reads);
    expect(pages.every((p) => p.records.length === 5)).toBe(true);
    expect(fake.maxInFlight).toBeLessThanOrEqual(5);
    expect(fake.maxInFlight).toBeGreaterThanOrEqual(2);
    // One token refresh served both processes.
    expect(fake.tokenCalls).toHaveLength(1);
  });

  it('retries 5xx a couple of times, then fails as retryable PLATFORM_UNAVAILABLE', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(3, { startMs: T0 });
    fake.fault({ status: 503, times: 2 });
    expect((await h.adapter.readPage('contacts', {})).records).toHaveLength(3);
    fake.fault({ status: 500, times: 3 });
    const err = await h.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformError);
    expect(err).toMatchObject({ code: 'PLATFORM_UNAVAILABLE', retryable: true });
  });

  it('refreshes once on a 401 and goes on; a 403 is an auth failure that says what to do', async () => {
    const { fake, h } = await setup();
    fake.data.Contacts = buildContacts(3, { startMs: T0 });
    await h.adapter.readPage('contacts', {});
    fake.expireAccessTokens();
    expect((await h.adapter.readPage('contacts', {})).records).toHaveLength(3);
    expect(fake.tokenCalls.map((c) => c.outcome)).toEqual(['issued', 'issued']);

    const wrong = await setup();
    const stranger = makeAdapter(wrong.fake, redis.url, testPrefix('xero'), wrong.fake.issueRefreshToken(), { xeroTenantId: 'another-organisation' });
    onTestFinished(() => stranger.close());
    const err = await stranger.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'PLATFORM_AUTH_FAILED', retryable: false });
    expect((err as Error).message).toMatch(/another-organisation.*reconnect/);
  });

  it('createAdapter builds it from the tenants file, and says what is missing without PLATFORM_TOKEN_KEY', async () => {
    const fake = await startFake();
    onTestFinished(() => fake.close());
    const file = parseTenants(
      JSON.stringify({
        tenants: [
          {
            id: 'kiwi',
            collections: { clientId: 'c', clientSecret: 's' },
            platform: { kind: 'xero', clientId: 'XEROCLIENT1', clientSecret: '${XS}', refreshToken: '${XR}', xeroTenantId: fake.options.xeroTenantId, apiUrl: fake.apiUrl, tokenUrl: fake.tokenUrl },
          },
        ],
      }),
      { XS: fake.options.clientSecret, XR: fake.issueRefreshToken() },
    );
    const platform = file.tenants[0]!.platform;
    const logger = createLogger({ level: 'silent' });
    const client = new Redis(redis.url);
    onTestFinished(() => client.disconnect());
    expect(() => createAdapter(platform, { logger, redis: client, prefix: testPrefix('xero') })).toThrow(/PLATFORM_TOKEN_KEY/);
    expect(() => createAdapter(platform, { logger, redis: client, prefix: testPrefix('xero'), tokenKey: 'short' })).toThrow(/32 random bytes/);
    fake.data.Contacts = buildContacts(2, { startMs: T0 });
    const adapter = createAdapter(platform, { logger, redis: client, prefix: testPrefix('xero'), tokenKey: 'ab'.repeat(32) });
    onTestFinished(async () => adapter.close?.());
    expect((await adapter.readPage('contacts', {})).records).toHaveLength(2);
  });
});
