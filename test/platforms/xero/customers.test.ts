/**
 * Only debtors reach the collections service: a Xero contact is pushed when Xero flags it a customer
 * (`IsCustomer`) or when a receivable invoice needs it, even when Xero neither flagged it nor stamped it anew
 * (the invoice would otherwise wait for its contact until it is dead-lettered). A contact once pushed stays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from '../../helpers/redis.js';
import { startRig, type Rig } from '../../helpers/rig.js';
import type { FakeXero } from './fake-xero.js';
import { examples, fakeId, msDate, type XeroObject } from './fixtures.js';
import { startFake, TOKEN_KEY, xeroPlatform } from './harness.js';

const T0 = Date.parse('2026-03-01T08:00:00Z');
const CLIENT = 'client-debtors';

describe('a Xero tenant pushes customers and contacts with receivables, never suppliers', () => {
  const redis = useTestRedis();
  let fake: FakeXero;
  let rig: Rig;
  const writes = (): number => rig.sim.counters().writesCommitted;
  const inService = (id: string) => rig.sim.data(CLIENT).contacts.find((c) => c.extPlatformId === id);

  const contact = (i: number, flags: { IsSupplier: boolean; IsCustomer: boolean }): XeroObject => ({
    ...examples.contact(),
    ContactID: fakeId(1, i),
    Name: `Contact ${i}`,
    UpdatedDateUTC: msDate(T0 + i * 1000),
    ...flags,
  });
  const invoice = (i: number, contactIndex: number, type: 'ACCREC' | 'ACCPAY', stampMs: number): XeroObject => ({
    ...examples.invoices()[2]!, // AUTHORISED
    InvoiceID: fakeId(2, i),
    InvoiceNumber: `INV-${i}`,
    Type: type,
    Contact: { ContactID: fakeId(1, contactIndex) },
    UpdatedDateUTC: msDate(stampMs),
  });
  const CUSTOMER = fakeId(1, 0);
  const SUPPLIER = fakeId(1, 1);
  const LATE = fakeId(1, 2); // a supplier that gets a receivable invoice later
  const TURNED = fakeId(1, 3); // a customer that later becomes a supplier only

  beforeAll(async () => {
    fake = await startFake();
    fake.data.Contacts = [
      contact(0, { IsSupplier: false, IsCustomer: true }),
      contact(1, { IsSupplier: true, IsCustomer: false }),
      // Stamped long before the others: no incremental read (cursor minus lookback) lists it again.
      { ...contact(2, { IsSupplier: true, IsCustomer: false }), UpdatedDateUTC: msDate(T0 - 86_400_000) },
      contact(3, { IsSupplier: false, IsCustomer: true }),
    ];
    fake.data.Invoices = [invoice(0, 0, 'ACCREC', T0), invoice(1, 1, 'ACCPAY', T0), invoice(2, 2, 'ACCPAY', T0), invoice(3, 3, 'ACCREC', T0)];
    rig = await startRig({
      redisUrl: redis.url,
      tenants: [{ id: 'debtors', clientId: CLIENT, platform: xeroPlatform(fake) }],
      env: { PLATFORM_TOKEN_KEY: TOKEN_KEY },
    });
  });
  afterAll(async () => {
    await rig?.close();
    await fake?.close();
  });

  it('first run: customers are pushed, suppliers only are not', async () => {
    const run = await rig.sync('debtors');
    expect(run.outcome).toBe('succeeded');
    expect(rig.sim.data(CLIENT).contacts.map((c) => c.extPlatformId).sort()).toEqual([CUSTOMER, TURNED].sort());
    expect(rig.sim.data(CLIENT).invoices.map((i) => i.number).sort()).toEqual(['INV-0', 'INV-3']);
    expect(run.counts['contacts.skipped']).toBe(2);
    expect(fake.apiCalls('/Contacts').every((c) => c.query['IDs'] === undefined)).toBe(true);
  });

  it('a supplier whose first receivable invoice arrives is pushed in the same run, though Xero did not stamp it anew', async () => {
    fake.data.Invoices.push(invoice(4, 2, 'ACCREC', T0 + 3_600_000));
    // A customer turned supplier only (its receivables gone), renamed: it stays, and its change still arrives.
    Object.assign(fake.data.Contacts[3]!, { IsSupplier: true, IsCustomer: false, Name: 'Contact 3 renamed', UpdatedDateUTC: msDate(T0 + 3_600_000) });
    const from = fake.requests.length;
    const run = await rig.sync('debtors');
    expect(run.outcome).toBe('succeeded');
    expect(inService(LATE)).toMatchObject({ name: 'Contact 2', remindersEnabled: true });
    const late = rig.sim.data(CLIENT).invoices.find((i) => i.number === 'INV-4');
    expect(late?.contact.uuid).toBe(inService(LATE)?.uuid);
    expect(inService(TURNED)).toMatchObject({ name: 'Contact 3 renamed', remindersEnabled: true });
    expect(inService(SUPPLIER)).toBeUndefined();
    // The contact was asked of Xero by id (the incremental listing did not include it), once.
    const byId = fake.requests.slice(from).filter((c) => c.path === '/Contacts' && c.query['IDs'] !== undefined);
    expect(byId.map((c) => c.query['IDs'])).toEqual([LATE]);
    expect(await rig.app.stores.pending.list('debtors')).toEqual([]);
    expect(fake.violations).toEqual([]);
  });

  it('an unchanged resync writes nothing and asks Xero for no contact by id', async () => {
    const before = writes();
    const from = fake.requests.length;
    const run = await rig.sync('debtors');
    expect(run.outcome).toBe('succeeded');
    expect(writes() - before).toBe(0);
    expect(fake.requests.slice(from).some((c) => c.query['IDs'] !== undefined)).toBe(false);
  });
});
