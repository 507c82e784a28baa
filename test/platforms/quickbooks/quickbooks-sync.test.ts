/**
 * End to end: a QuickBooks tenant syncs into the simulator through the worker, beside a Xero tenant and a file
 * tenant in the same worker (issue 15, done when). The QuickBooks double serves the API and accepts only the access
 * tokens Intuit's token endpoint double (test/doubles/quickbooks-oauth.ts) issued through the shared platform-OAuth room.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeNdjson } from '../../../src/platforms/index.js';
import type { SimulatorData } from '../../../src/simulator/index.js';
import { QuickBooksOAuthDouble } from '../../doubles/quickbooks-oauth.js';
import { useTestRedis } from '../../helpers/redis.js';
import { startRig, type Rig } from '../../helpers/rig.js';
import type { FakeXero } from '../xero/fake-xero.js';
import { buildContacts, buildInvoices } from '../xero/fixtures.js';
import { startFake, TOKEN_KEY, xeroPlatform } from '../xero/harness.js';
import { QboDouble } from './double.js';
import { customer, invoice } from './fixtures.js';

const HOUR = 3_600_000;
const T0 = Date.now() - 48 * HOUR;

describe('a QuickBooks tenant syncs beside a Xero and a file tenant in one worker', () => {
  const redis = useTestRedis();
  let qbo: QboDouble;
  let tokens: QuickBooksOAuthDouble;
  let xero: FakeXero;
  let folder: string;
  let rig: Rig;
  const maple = () => rig.sim.data('client-maple');
  const inv = (id: string): SimulatorData['invoices'][number] | undefined => maple().invoices.find((i) => i.extPlatformId === id);

  beforeAll(async () => {
    qbo = await QboDouble.start({ tokens: [] });
    tokens = await QuickBooksOAuthDouble.start({ clientId: 'ABqbo-client-1', clientSecret: 'qbo-secret-1', realmId: qbo.realmId, onAccess: (t) => qbo.acceptToken(t) });
    // QuickBooks: 4 customers (one inactive, one a job of the first), 2 invoices each for the active ones.
    let t = T0;
    for (const id of ['1', '2', '3']) qbo.put('Customer', customer(id), (t += 1000));
    qbo.put('Customer', customer('4', { Active: false }), (t += 1000));
    qbo.put('Customer', customer('5', { Job: true, ParentRef: { value: '1' }, DisplayName: 'Roof', FullyQualifiedName: 'Customer 1:Roof' }), (t += 1000));
    for (const cid of ['1', '2', '3', '5']) for (const k of [0, 1]) qbo.put('Invoice', invoice(String(1000 + Number(cid) * 10 + k), cid), (t += 1000));
    // Xero and the file tenant: small, only to share the worker.
    xero = await startFake();
    const contacts = buildContacts(5, { startMs: T0 });
    xero.data.Contacts = contacts;
    xero.data.Invoices = buildInvoices(contacts, 1, { startMs: T0 });
    folder = await mkdtemp(join(tmpdir(), 'cs-qbo-file-'));
    const stamp = new Date(T0).toISOString();
    await writeNdjson(join(folder, 'contacts.ndjson'), [1, 2, 3].map((i) => ({ id: `F${i}`, updatedAt: stamp, name: `File contact ${i}` })));
    await writeNdjson(join(folder, 'invoices.ndjson'), [1, 2, 3].map((i) => ({ id: `FI${i}`, contactId: `F${i}`, updatedAt: stamp, status: 'AUTHORISED', number: `F-${i}`, date: '2026-01-01', dueDate: '2026-02-01', total: 50 })));
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [
        { id: 'maple', platform: { kind: 'quickbooks', clientId: tokens.options.clientId, clientSecret: tokens.options.clientSecret, refreshToken: tokens.issueRefreshToken(), realmId: qbo.realmId, environment: 'sandbox', apiUrl: qbo.apiUrl, tokenUrl: tokens.tokenUrl } },
        { id: 'kiwi', platform: xeroPlatform(xero) },
        { id: 'acme', platform: { kind: 'file', path: folder } },
      ],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY, SYNC_PAGE_SIZE: '4', CURSOR_LOOKBACK_S: '60' },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await tokens?.close();
    await qbo?.close();
    await xero?.close();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('first sync: the three tenants run in one worker; QuickBooks customers, jobs and invoices arrive', async () => {
    const runs = await Promise.all([rig.sync('maple'), rig.sync('kiwi'), rig.sync('acme')]);
    expect(runs.map((r) => r.outcome)).toEqual(['succeeded', 'succeeded', 'succeeded']);
    expect(rig.sim.data('client-kiwi').contacts).toHaveLength(5);
    expect(rig.sim.data('client-acme').invoices).toHaveLength(3);
    const contacts = maple().contacts;
    expect(contacts.map((c) => c.extPlatformId).sort()).toEqual(['1', '2', '3', '4', '5']);
    const byId = new Map(contacts.map((c) => [c.extPlatformId, c]));
    expect(byId.get('1')).toMatchObject({ name: 'Customer 1', email: 'billing1@example.com', extCompanyId: qbo.realmId, remindersEnabled: true });
    expect(byId.get('4')?.remindersEnabled).toBe(false); // inactive: a deletion
    expect(byId.get('5')?.name).toBe('Customer 1:Roof');
    expect(maple().invoices).toHaveLength(8);
    expect(inv('1050')).toMatchObject({ number: 'INV-1050', total: 100, outstandingAmount: 100, remindersEnabled: true });
    expect(inv('1050')?.contact.uuid).toBe(byId.get('5')?.uuid);
    expect(qbo.violations).toEqual([]);
    // Tokens came from the token endpoint through the shared OAuth room, and none was logged.
    expect(tokens.tokenCalls.filter((c) => c.outcome === 'issued').length).toBeGreaterThanOrEqual(1);
    const logs = rig.logs.join('');
    for (const t of [...tokens.issuedRefresh, ...tokens.issuedAccess]) expect(logs).not.toContain(t);
  });

  it('incremental: a payment over three invoices lowers each once; an inactive customer, a void, a change-feed deletion', async () => {
    const now = Date.now() - 60_000;
    qbo.pay('9001', '1', { '1010': 10, '1011': 11, '1050': 50 }, now);
    qbo.update('Customer', '2', { Active: false }, now);
    qbo.voidInvoice('1030', now);
    qbo.remove('Invoice', '1031', now);
    const from = qbo.requests.length;
    const run = await rig.sync('maple');
    expect(run.outcome).toBe('succeeded');
    // Totals are 100 + Id % 50: 1010 is 110, 1011 is 111, 1050 is 100.
    expect(inv('1010')?.outstandingAmount).toBe(100);
    expect(inv('1011')?.outstandingAmount).toBe(100);
    expect(inv('1050')?.outstandingAmount).toBe(50);
    expect(maple().contacts.find((c) => c.extPlatformId === '2')?.remindersEnabled).toBe(false);
    expect(inv('1030')).toMatchObject({ outstandingAmount: 0, remindersEnabled: false });
    expect(inv('1031')).toMatchObject({ outstandingAmount: 0, remindersEnabled: false });
    const calls = qbo.requests.slice(from);
    expect(calls.some((c) => c.path.endsWith('/cdc'))).toBe(true);
    // Customers and invoices are read from their cursors (payments had none: the first run found no payment).
    const listings = calls.filter((c) => c.statement !== undefined && /from (Customer|Invoice) .*order by/.test(c.statement));
    expect(listings.length).toBeGreaterThan(0);
    expect(listings.every((c) => c.statement!.includes('MetaData.LastUpdatedTime >='))).toBe(true);
  });

  it('the payment edited to two invoices, then deleted: the balances move back', async () => {
    qbo.pay('9001', '1', { '1010': 10, '1011': 11 }, Date.now() - 30_000);
    expect((await rig.sync('maple')).outcome).toBe('succeeded');
    expect(inv('1050')?.outstandingAmount).toBe(100);
    expect(inv('1010')?.outstandingAmount).toBe(100);
    expect(inv('1011')?.outstandingAmount).toBe(100);
    qbo.deletePayment('9001', Date.now() - 20_000);
    expect((await rig.sync('maple')).outcome).toBe('succeeded');
    expect(inv('1010')?.outstandingAmount).toBe(110);
    expect(inv('1011')?.outstandingAmount).toBe(111);
  });

  it('a 429 is waited out within the run; an unmappable invoice is a dead letter with its place and reason', async () => {
    qbo.put('Invoice', invoice('1099', '3', { TxnDate: '03/01/2026' }), Date.now() - 10_000);
    qbo.update('Customer', '3', { DisplayName: 'Customer 3 renamed' }, Date.now() - 10_000);
    qbo.fault({ path: 'query', status: 429, headers: { 'retry-after': '1' } });
    const run = await rig.sync('maple');
    expect(run.outcome).toBe('partial');
    expect(qbo.requests.some((r) => r.status === 429)).toBe(true);
    expect(maple().contacts.find((c) => c.extPlatformId === '3')?.name).toBe('Customer 3 renamed');
    const letters = await rig.app.stores.deadLetters.list('maple', { entity: 'invoices' });
    expect(letters).toEqual([expect.objectContaining({ platformId: '1099', place: 'quickbooks:Invoice 1099', reason: expect.stringMatching(/^date: /) as unknown })]);
  });
});
