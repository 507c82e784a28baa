import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PlatformError, PlatformRateLimitedError } from '../../../src/platforms/types.js';
import { QBO_MINOR_VERSION } from '../../../src/platforms/quickbooks/index.js';
import { testPrefix, useTestRedis } from '../../helpers/redis.js';
import { QboDouble, QBO_TEST_TOKEN, qboStamp } from './double.js';
import { customer, invoice, seed } from './fixtures.js';
import { FixedAccess, makeAdapter, readAll, type AdapterHandle } from './harness.js';

const T0 = Date.parse('2026-03-01T08:00:00Z');
let clock = T0 + 3_600_000;
const now = (): number => clock;

describe('QuickBooks adapter against the double', () => {
  const redis = useTestRedis();
  let double: QboDouble;
  let h: AdapterHandle;

  beforeEach(async () => {
    clock = T0 + 3_600_000;
    double = await QboDouble.start({ now });
    h = makeAdapter(double, redis.url, testPrefix('qbo'));
  });
  afterEach(async () => {
    await h.close();
    await double.close();
  });

  it('first read: customers (inactive ones deleted, jobs by their full name), invoices, one payment record per settled invoice', async () => {
    seed(double, 3, T0);
    double.put('Customer', customer('9', { Active: false }), T0 + 50_000);
    double.put('Customer', customer('10', { Job: true, ParentRef: { value: '1' }, FullyQualifiedName: 'Customer 1:Kitchen', DisplayName: 'Kitchen', Mobile: { FreeFormNumber: '+966 50 000 0010' } }), T0 + 51_000);
    double.pay('7001', '1', { '1002': 40, '1003': 25.5 }, T0 + 60_000);

    const contacts = await readAll(h.adapter, 'contacts');
    expect(contacts.bad).toEqual([]);
    expect(contacts.records.map((c) => c.id)).toEqual(['1', '2', '3', '9', '10']);
    const byId = new Map(contacts.records.map((c) => [c.id, c]));
    expect(byId.get('1')).toMatchObject({ name: 'Customer 1', firstName: 'Amal', lastName: 'Family1', email: 'billing1@example.com', phoneNumber: '(555) 010-0001', street: '1 Main Street, Suite 4', city: 'Riyadh', postalCode: '12211', country: 'SA', companyId: double.realmId, deleted: false });
    expect(byId.get('9')?.deleted).toBe(true);
    expect(byId.get('10')).toMatchObject({ name: 'Customer 1:Kitchen', phoneNumber: '+966 50 000 0010', deleted: false });

    const invoices = await readAll(h.adapter, 'invoices');
    expect(invoices.records).toHaveLength(6);
    const paid = invoices.records.find((i) => i.id === '1002');
    expect(paid).toMatchObject({ contactId: '1', number: 'INV-1002', date: '2026-02-01', dueDate: '2026-03-01', total: 102, outstandingAmount: 62, status: 'AUTHORISED', currencyCode: 'USD' });
    expect(paid?.updatedAt).toBe(new Date(T0 + 60_000).toISOString());

    const payments = await readAll(h.adapter, 'payments');
    expect(payments.records.map((p) => [p.id, p.invoiceId, p.amount, p.deleted])).toEqual([
      ['7001:1002', '1002', 40, false],
      ['7001:1003', '1003', 25.5, false],
    ]);
    // Every statement pinned the minor version; customers asked for inactive ones too; every entity fit its schema.
    expect(double.requests.every((r) => r.query['minorversion'] === QBO_MINOR_VERSION)).toBe(true);
    expect(double.requests.find((r) => r.statement?.includes('from Customer'))?.statement).toContain('Active in (true, false)');
    expect(double.violations).toEqual([]);
  });

  it('pages by keyset: a record updated mid-listing and records sharing one stamp are never skipped nor repeated', async () => {
    // 30 invoices, the first 12 at one and the same second; the rest a second apart.
    double.put('Customer', customer('1'), T0);
    for (let i = 0; i < 30; i++) double.put('Invoice', invoice(String(2000 + i), '1'), i < 12 ? T0 + 1000 : T0 + 1000 * (i + 1));
    const listed = await readAll(h.adapter, 'invoices', {
      pageSize: 5,
      between: (page) => {
        // After page 2 an early invoice changes: it moves to the end of the order (offset paging would skip one).
        if (page === 2) double.update('Invoice', '2001', { Balance: 10 }, T0 + 100_000);
      },
    });
    const ids = listed.records.map((r) => r.id);
    expect(new Set(ids).size).toBe(30);
    expect(listed.records.filter((r) => r.id === '2001').at(-1)?.outstandingAmount).toBe(10);
    const dupes = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect(dupes.every((id) => id === '2001')).toBe(true);
    expect(listed.records.length).toBeLessThanOrEqual(31);
  });

  it('incremental: asks from the cursor, reads deletions from the change feed, and confirms each by Id', async () => {
    const { invoices } = seed(double, 2, T0);
    await readAll(h.adapter, 'invoices');
    clock = T0 + 7_200_000;
    double.remove('Invoice', invoices[0]!, clock - 1000);
    double.phantomDeletes.add(`Invoice:${invoices[1]!}`); // the feed calls it deleted; it was only updated
    double.update('Invoice', invoices[1]!, { Balance: 5 }, clock - 500);
    const from = double.requests.length;
    const since = { updatedAt: new Date(T0 + 3_000_000).toISOString(), id: '' };
    const read = await readAll(h.adapter, 'invoices', { since });
    const calls = double.requests.slice(from);
    expect(calls[0]?.path).toMatch(/\/cdc$/);
    expect(calls[0]?.query['changedSince']).toBe('2026-03-01T08:50:00+00:00');
    expect(calls.some((c) => /Id in \(.*'1002'/.test(c.statement ?? '') && c.statement!.includes(`'${invoices[1]!}'`))).toBe(true);
    const deleted = read.records.filter((r) => r.deleted);
    expect(deleted).toEqual([expect.objectContaining({ id: invoices[0], deleted: true, status: 'VOIDED', contactId: '1', number: `INV-${invoices[0]!}`, outstandingAmount: 0 })]);
    expect(read.records.filter((r) => r.id === invoices[1]).every((r) => !r.deleted && r.outstandingAmount === 5)).toBe(true);
    expect(calls.filter((c) => c.statement?.includes('order by')).every((c) => c.statement!.includes("MetaData.LastUpdatedTime >= '2026-03-01T08:50:00+00:00'"))).toBe(true);
  });

  it('a cursor older than the feed\'s 30 days: no change feed call; every remembered id is checked by Id instead', async () => {
    const { invoices } = seed(double, 3, T0);
    await readAll(h.adapter, 'invoices');
    clock = T0 + 40 * 86_400_000;
    double.remove('Invoice', invoices[2]!, T0 + 20 * 86_400_000);
    const from = double.requests.length;
    const read = await readAll(h.adapter, 'invoices', { since: { updatedAt: new Date(T0).toISOString(), id: '' } });
    const calls = double.requests.slice(from);
    expect(calls.some((c) => c.path.endsWith('/cdc'))).toBe(false);
    expect(read.records.filter((r) => r.deleted).map((r) => r.id)).toEqual([invoices[2]]);
  });

  it('a payment over three invoices: one record each; edited to two, the third goes back; deleted, all go back', async () => {
    seed(double, 2, T0);
    double.pay('8001', '1', { '1002': 30, '1003': 20, '1004': 10 }, T0 + 60_000);
    const first = await readAll(h.adapter, 'payments');
    expect(first.records.map((p) => [p.invoiceId, p.amount, p.deleted])).toEqual([['1002', 30, false], ['1003', 20, false], ['1004', 10, false]]);
    clock = T0 + 7_200_000;
    double.pay('8001', '1', { '1002': 30, '1003': 25 }, clock - 1000);
    const since = { updatedAt: new Date(T0 + 3_000_000).toISOString(), id: '' };
    const edited = await readAll(h.adapter, 'payments', { since });
    expect(edited.records.map((p) => [p.id, p.amount, p.deleted])).toEqual([['8001:1002', 30, false], ['8001:1003', 25, false], ['8001:1004', 10, true]]);
    const invoices = await readAll(h.adapter, 'invoices', { since });
    expect(invoices.records.find((i) => i.id === '1004')?.outstandingAmount).toBe(invoice('1004', '2')['TotalAmt']);
    clock = T0 + 10_800_000;
    double.deletePayment('8001', clock - 1000);
    const gone = await readAll(h.adapter, 'payments', { since: { updatedAt: new Date(T0 + 7_000_000).toISOString(), id: '' } });
    expect(gone.records.map((p) => [p.id, p.deleted]).sort()).toEqual([['8001:1002', true], ['8001:1003', true], ['8001:1004', true]]);
  });

  it('voided invoices are VOIDED with nothing outstanding; paid ones PAID', async () => {
    seed(double, 1, T0);
    double.voidInvoice('1002', T0 + 70_000);
    double.pay('8100', '1', { '1003': 103 }, T0 + 80_000);
    const read = await readAll(h.adapter, 'invoices');
    expect(read.records.find((i) => i.id === '1002')).toMatchObject({ status: 'VOIDED', total: 0, outstandingAmount: 0 });
    expect(read.records.find((i) => i.id === '1003')).toMatchObject({ status: 'PAID', outstandingAmount: 0 });
  });

  it('unmappable records are bad records placed `quickbooks:<Entity> <Id>` with the reason; the page goes on', async () => {
    double.put('Customer', customer('1'), T0);
    double.put('Invoice', invoice('1042', '1', { TxnDate: 'yesterday' }), T0 + 1000);
    double.put('Invoice', invoice('1043', '1', { CustomerRef: null }), T0 + 2000);
    double.put('Invoice', invoice('1044', '1'), T0 + 3000);
    const read = await readAll(h.adapter, 'invoices');
    expect(read.records.map((r) => r.id)).toEqual(['1044']);
    expect(read.bad).toEqual([
      { entity: 'invoices', place: 'quickbooks:Invoice 1042', platformId: '1042', reason: expect.stringMatching(/^date: /) as unknown },
      { entity: 'invoices', place: 'quickbooks:Invoice 1043', platformId: '1043', reason: 'contactId: required' },
    ]);
  });

  it('faults: AuthenticationFault refreshes once and retries; a second one fails with what to do', async () => {
    seed(double, 1, T0);
    const auth = new FixedAccess('stale-token', () => QBO_TEST_TOKEN);
    const a = makeAdapter(double, redis.url, testPrefix('qbo'), { access: auth });
    try {
      expect((await readAll(a.adapter, 'contacts')).records).toHaveLength(1);
      expect(auth.refreshes).toBe(1);
      double.fault({ path: 'query', status: 401, type: 'AuthenticationFault', times: 2 });
      const err = await a.adapter.readPage('contacts', {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PlatformError);
      expect((err as PlatformError).code).toBe('PLATFORM_AUTH_FAILED');
      expect((err as PlatformError).message).toMatch(/reconnect the app .* new refresh token in the tenants file/);
      expect(auth.refreshes).toBe(2);
    } finally {
      await a.close();
    }
  });

  it('faults: SystemFault is retried boundedly, then fails retryable with the intuit_tid logged', async () => {
    seed(double, 1, T0);
    double.fault({ path: 'query', status: 500, type: 'SystemFault', code: '10001', times: 2 });
    expect((await readAll(h.adapter, 'contacts')).records).toHaveLength(1);
    double.fault({ path: 'query', status: 503, type: 'SystemFault', code: '10001', times: 3 });
    const err = await h.adapter.readPage('contacts', {}).catch((e: unknown) => e);
    expect((err as PlatformError).code).toBe('PLATFORM_UNAVAILABLE');
    expect((err as PlatformError).retryable).toBe(true);
    const failed = double.requests.filter((r) => r.status >= 500);
    expect(failed).toHaveLength(5);
    const logs = h.logs.join('');
    for (const r of failed) expect(logs).toContain(r.tid);
    expect((err as Error).message).toContain(failed.at(-1)!.tid);
  });

  it('faults: a page failing for one record (ValidationFault, SystemFault 10000) is narrowed down to it; the rest is read', async () => {
    double.put('Customer', customer('1'), T0);
    for (let i = 0; i < 12; i++) double.put('Invoice', invoice(String(3000 + i), '1'), T0 + 1000 * (i + 1));
    double.poison('Invoice', '3005', { status: 400, type: 'ValidationFault', code: '6000', message: 'A business validation error has occurred' });
    double.poison('Invoice', '3009', { status: 500, type: 'SystemFault', code: '10000' });
    const read = await readAll(h.adapter, 'invoices', { pageSize: 8 });
    expect([...new Set(read.records.map((r) => r.id))].sort()).toEqual(['3000', '3001', '3002', '3003', '3004', '3006', '3007', '3008', '3010', '3011']);
    expect(read.bad).toHaveLength(2);
    for (const bad of read.bad) expect(bad.place).toMatch(/^quickbooks:Invoice at startposition \d+ of the listing since 2026-03-01T08:00:\d\d\+00:00$/);
    expect(read.bad[0]?.reason).toMatch(/^ValidationFault: 6000: A business validation error has occurred .*intuit_tid 1-/);
    expect(read.bad[1]?.reason).toMatch(/^SystemFault: 10000: .*made inactive/);
    // A page that fails for the whole listing (code 4000: the statement) is never blamed on a record.
    double.fault({ path: 'query', status: 400, type: 'ValidationFault', code: '4000', times: 1 });
    double.put('Invoice', invoice('3100', '1'), T0 + 100_000);
    const err = await readAll(h.adapter, 'invoices', { since: { updatedAt: new Date(T0 + 99_000).toISOString(), id: '' } }).catch((e: unknown) => e);
    expect((err as PlatformError).code).toBe('PLATFORM_BAD_RESPONSE');
  });

  it('faults: 429 is a rate limit to wait out (Retry-After)', async () => {
    double.fault({ path: 'query', status: 429, headers: { 'retry-after': '3' } });
    const err = await readAll(h.adapter, 'invoices').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PlatformRateLimitedError);
    expect((err as PlatformRateLimitedError).retryAfterMs).toBe(3000);
    expect((err as Error).message).toMatch(/intuit_tid 1-/);
  });

  it('the double refuses a statement outside its grammar (ValidationFault 4000) and a change feed older than 30 days', async () => {
    const ask = async (path: string): Promise<{ status: number; body: unknown; tid: string | null }> => {
      const res = await fetch(`${double.apiUrl}/v3/company/${double.realmId}/${path}`, { headers: { authorization: `Bearer ${QBO_TEST_TOKEN}`, accept: 'application/json' } });
      return { status: res.status, body: await res.json(), tid: res.headers.get('intuit_tid') };
    };
    const q = (sql: string): string => `query?minorversion=${QBO_MINOR_VERSION}&query=${encodeURIComponent(sql)}`;
    for (const sql of ['select Id from Invoice', 'select * from Invoice where TotalAmt > 5', 'select * from Bill', 'select * from Invoice maxresults 1001', 'delete from Invoice']) {
      const got = await ask(q(sql));
      expect(got.status).toBe(400);
      expect(got.body).toMatchObject({ Fault: { type: 'ValidationFault', Error: [{ code: '4000' }] } });
      expect(got.tid).toMatch(/^1-/);
    }
    expect((await ask(q("select * from Customer where Active in (true, false) and MetaData.LastUpdatedTime >= '2026-01-01T00:00:00+00:00' order by MetaData.LastUpdatedTime startposition 1 maxresults 1000"))).status).toBe(200);
    const old = await ask(`cdc?minorversion=${QBO_MINOR_VERSION}&entities=Invoice&changedSince=${encodeURIComponent(qboStamp(clock - 31 * 86_400_000))}`);
    expect(old.status).toBe(400);
    expect(old.body).toMatchObject({ Fault: { type: 'ValidationFault' } });
    const noToken = await fetch(`${double.apiUrl}/v3/company/${double.realmId}/${q('select * from Invoice')}`);
    expect(noToken.status).toBe(401);
  });
});
