import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ifModifiedSince } from '../../../src/platforms/xero/index.js';
import { JOBS } from '../../../src/queues/index.js';
import { waitForRun } from '../../../src/state/index.js';
import { useTestRedis } from '../../helpers/redis.js';
import { startRig, type Rig } from '../../helpers/rig.js';
import type { FakeXero } from './fake-xero.js';
import { buildContacts, buildInvoices, buildPayments, msDate, type XeroObject } from './fixtures.js';
import { startFake, TOKEN_KEY, xeroPlatform } from './harness.js';

const T0 = Date.parse('2026-03-01T08:00:00Z');
const CLIENT = 'client-kiwi';
const LOOKBACK_S = 300;

describe('a Xero-connected tenant syncs into the service', () => {
  const redis = useTestRedis();
  let fake: FakeXero;
  let rig: Rig;
  let contacts: XeroObject[];
  let invoices: XeroObject[];
  const writes = (): number => rig.sim.counters().writesCommitted;

  beforeAll(async () => {
    fake = await startFake();
    contacts = buildContacts(40, { startMs: T0 });
    invoices = buildInvoices(contacts, 2, { startMs: T0 });
    fake.data.Contacts = contacts;
    fake.data.Invoices = invoices;
    fake.data.Payments = buildPayments(invoices, { startMs: T0 });
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'kiwi', platform: xeroPlatform(fake) }],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, SYNC_PAGE_SIZE: '15', CURSOR_LOOKBACK_S: String(LOOKBACK_S) },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
  });

  it('first run: every contact, every receivable invoice, with their Xero ids and the organisation as company', async () => {
    const run = await rig.sync('kiwi');
    expect(run.outcome).toBe('succeeded');
    const stored = rig.sim.data(CLIENT);
    expect(stored.contacts).toHaveLength(40);
    const byExt = new Map(stored.contacts.map((c) => [c.extPlatformId, c]));
    for (const c of contacts) {
      const s = byExt.get(c['ContactID'] as string);
      expect(s?.name).toBe(c['Name']);
      expect(s?.extCompanyId).toBe(fake.options.xeroTenantId);
      expect(s?.email).toBe(c['EmailAddress']);
    }
    const receivable = invoices.filter((i) => i['Type'] === 'ACCREC');
    expect(stored.invoices).toHaveLength(receivable.length);
    const invByExt = new Map(stored.invoices.map((i) => [i.extPlatformId, i]));
    for (const inv of receivable) {
      const s = invByExt.get(inv['InvoiceID'] as string);
      expect(s?.number).toBe(inv['InvoiceNumber']);
      expect(s?.total).toBe(inv['Total']);
      expect(s?.contact.uuid).toBe(byExt.get((inv['Contact'] as XeroObject)['ContactID'] as string)?.uuid);
      expect(s?.outstandingAmount).toBe(inv['Status'] === 'AUTHORISED' ? inv['AmountDue'] : 0);
      expect(s?.remindersEnabled).toBe(inv['Status'] !== 'VOIDED');
    }
    // Xero payments have no id in the service: listed as unlinked, their invoices' balances pushed.
    expect(run.counts['payments.unlinked']).toBe(fake.data.Payments.length);
    expect(fake.violations).toEqual([]);
  });

  it('an incremental run asks Xero from the cursor minus the lookback and writes only what changed', async () => {
    const later = T0 + 3_600_000;
    for (const i of [3, 17, 29]) {
      contacts[i]!['Name'] = `Renamed ${i}`;
      contacts[i]!['UpdatedDateUTC'] = msDate(later + i);
    }
    const changedInvoices = invoices.filter((i) => i['Type'] === 'ACCREC' && i['Status'] === 'AUTHORISED').slice(0, 2);
    for (const inv of changedInvoices) {
      inv['AmountDue'] = 60;
      inv['UpdatedDateUTC'] = msDate(later);
    }
    const before = writes();
    const from = fake.requests.length;
    const run = await rig.sync('kiwi');
    expect(run.outcome).toBe('succeeded');
    expect(writes() - before).toBe(5);
    const calls = fake.requests.slice(from);
    const highContacts = T0 + 39_000; // the newest contact stamp of the first run
    const firstContacts = calls.find((c) => c.path === '/Contacts');
    expect(firstContacts?.headers['if-modified-since']).toBe(ifModifiedSince(highContacts - LOOKBACK_S * 1000));
    expect(calls.every((c) => c.headers['if-modified-since'] !== undefined)).toBe(true);
    const stored = rig.sim.data(CLIENT);
    expect(stored.contacts.filter((c) => c.name?.startsWith('Renamed '))).toHaveLength(3);
    for (const inv of changedInvoices) expect(stored.invoices.find((s) => s.extPlatformId === inv['InvoiceID'])?.outstandingAmount).toBe(60);
  });

  it('a daily limit reschedules the run (delayed, not failed) and it completes after Retry-After', async () => {
    const later = T0 + 7_200_000;
    contacts[5]!['Name'] = 'After the day limit';
    contacts[5]!['UpdatedDateUTC'] = msDate(later);
    fake.fault({ path: '/Invoices', status: 429, headers: { 'retry-after': '2', 'x-rate-limit-problem': 'day' } });
    const from = fake.requests.length;
    const run = await rig.sync('kiwi');
    expect(run.outcome).toBe('succeeded');
    expect(rig.logs.join('')).toContain('platform rate limit: rescheduling the run');
    const job = await rig.app.queues.sync.getJob(run.runId.replace(/^run-/, ''));
    expect(await job?.getState()).toBe('completed');
    expect(job?.failedReason ?? '').toBe('');
    const calls = fake.requests.slice(from).filter((c) => c.path === '/Invoices');
    const limited = calls.findIndex((c) => c.status === 429);
    expect(limited).toBeGreaterThanOrEqual(0);
    const resumed = calls[limited + 1];
    expect(resumed?.status).toBe(200);
    expect(resumed!.at - calls[limited]!.at).toBeGreaterThanOrEqual(2000);
    expect(rig.sim.data(CLIENT).contacts.some((c) => c.name === 'After the day limit')).toBe(true);
  });

  it('a short minute limit is waited out within the run', async () => {
    contacts[6]!['Name'] = 'After the minute limit';
    contacts[6]!['UpdatedDateUTC'] = msDate(T0 + 9_000_000);
    fake.fault({ path: '/Contacts', status: 429, headers: { 'retry-after': '1', 'x-rate-limit-problem': 'minute' } });
    const run = await rig.sync('kiwi');
    expect(run.outcome).toBe('succeeded');
    expect(rig.logs.join('')).toContain('platform rate limit: waiting');
    expect(rig.sim.data(CLIENT).contacts.some((c) => c.name === 'After the minute limit')).toBe(true);
  });

  it('the reconciliation pass catches a partial payment Xero did not stamp (UpdatedDateUTC unchanged)', async () => {
    const inv = invoices.filter((i) => i['Type'] === 'ACCREC' && i['Status'] === 'AUTHORISED')[5]!;
    inv['AmountDue'] = 15; // paid in part: Xero leaves UpdatedDateUTC as it was
    const incremental = await rig.sync('kiwi');
    expect(incremental.outcome).toBe('succeeded');
    const stored = () => rig.sim.data(CLIENT).invoices.find((s) => s.extPlatformId === inv['InvoiceID']);
    expect(stored()?.outstandingAmount).toBe(115);
    const from = fake.requests.length;
    const reconcile = await rig.sync('kiwi', 'reconcile');
    expect(reconcile.outcome).toBe('succeeded');
    expect(stored()?.outstandingAmount).toBe(15);
    // The pass lists every receivable invoice (from the start: no If-Modified-Since on its first page), nothing else.
    const calls = fake.requests.slice(from);
    expect(calls.length).toBeGreaterThan(1);
    expect(calls.every((c) => c.path === '/Invoices')).toBe(true);
    expect(calls[0]!.headers['if-modified-since']).toBeUndefined();
  });

  it('a revoked connection fails its run with what to do (a single-attempt job, so the run ends now)', async () => {
    fake.revokeAll();
    fake.expireAccessTokens();
    const requestedAt = Date.now();
    const data = JOBS.sync.schema.parse({ tenantId: 'kiwi', mode: 'incremental', trigger: 'test', requestedAt });
    await rig.app.queues.sync.add(JOBS.sync.name, data, { attempts: 1 });
    const run = await waitForRun(rig.app.stores.runs, 'kiwi', { mode: 'incremental', requestedAt, timeoutMs: 30_000 });
    expect(run.outcome).toBe('failed');
    expect(run.errors.join('\n')).toMatch(/revoked or has expired.*Reconnect the app.*new refresh token in the tenants file/);
  });
});
