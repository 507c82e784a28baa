/**
 * The run's window of records (issue 14): pages are pushed while their records fit, not behind page barriers;
 * invoices of mapped contacts flow while a contact page is still being pushed; and a checkpoint never passes
 * a record whose write is not done. A record held by scripted 503s (its retries wait out their back-offs, 1.5 s
 * or more in all; a 429's Retry-After would pause the tenant's whole run, decision 127) is the observable point:
 * everything is read while it waits.
 */
import { describe, expect, it } from 'vitest';
import { outstandingOf } from '../../src/mapping/index.js';
import type { Checkpoint } from '../../src/state/index.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';
import { useSampleRig } from '../helpers/sample-rig.js';

const CLIENT = 'client-acme';

/** Four 503s for the one request body holding `"extPlatformId":"<id>"` on `route`: retried after each back-off. */
const holdOne = (route: string, id: string) => [{ route, fault: '503' as const, count: 4, matching: `"extPlatformId":"${id}"` }];

describe('the sync pipeline keeps a window of records under way', () => {
  const s = useSampleRig({ contacts: 40, seed: 21, tenants: ['acme', 'beta', 'gamma'], env: { SYNC_CONCURRENCY: '4', SYNC_PAGE_SIZE: '10' }, logLevel: 'warn' });

  it('pushes invoices while a contact of the first page still waits', async () => {
    // The first contact's create is answered 503 four times: its page stays under way while it waits.
    s.rig.sim.setFaults({ latencyMs: 2, script: holdOne('POST /contact', s.data.contacts[0]!.id) });
    let finished = false;
    const run = s.rig.sync('acme', 'full').finally(() => (finished = true));
    let invoicesWhileAContactWaited = 0;
    while (!finished) {
      const stored = s.rig.sim.data(CLIENT);
      if ((s.rig.sim.counters().requests['POST /contact']?.['503'] ?? 0) > 0 && stored.contacts.length < s.data.contacts.length) {
        invoicesWhileAContactWaited = Math.max(invoicesWhileAContactWaited, stored.invoices.length);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await run).outcome).toBe('succeeded');
    expect(s.rig.sim.data(CLIENT).contacts).toHaveLength(s.data.contacts.length);
    // Before the window, the invoices started only once every contact was pushed.
    expect(invoicesWhileAContactWaited).toBeGreaterThan(0);
  });

  it('never saves a checkpoint past a page with a record under way', async () => {
    // The first invoice upsert of tenant beta waits 1.5 s or more; the invoice pages after it end meanwhile.
    s.rig.sim.resetCounters();
    const first = s.data.invoices.find((i) => i.status !== 'DRAFT')!;
    s.rig.sim.setFaults({ latencyMs: 2, script: holdOne('POST /invoice/create-update', first.id) });
    let finished = false;
    const run = s.rig.sync('beta', 'full').finally(() => (finished = true));
    const seen: Checkpoint[] = [];
    let invoicesWhileOneWaited = 0;
    const pushable = s.data.invoices.filter((i) => i.status !== 'DRAFT').length;
    while (!finished) {
      const held = (s.rig.sim.counters().requests['POST /invoice/create-update']?.['503'] ?? 0) > 0;
      const stored = s.rig.sim.data('client-beta').invoices.length;
      if (held && stored < pushable) {
        invoicesWhileOneWaited = Math.max(invoicesWhileOneWaited, stored);
        const cp = await s.rig.app.stores.cursors.getCheckpoint('beta');
        if (cp) seen.push(cp);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await run).outcome).toBe('succeeded');
    expect(s.rig.sim.data('client-beta').invoices).toHaveLength(pushable);
    expect(invoicesWhileOneWaited).toBeGreaterThan(10); // later invoice pages ended meanwhile
    expect(seen.length).toBeGreaterThan(0);
    for (const cp of seen) {
      // Wherever the contacts stand, the invoices resume from their first page, the one still under way.
      expect(cp.data.entity).not.toBe('payments');
      const invoices = cp.data.entity === 'invoices' ? cp.data : cp.data.next;
      if (invoices) expect(invoices.pageToken).toBeUndefined();
    }
  });

  it('pushes payments while an invoice page is under way, and its invoices get their balance once it ends', async () => {
    // Invoices without the platform's outstanding amount: their balance is total - known payments, so a payment
    // the ledger learns after its invoice was pushed must push that invoice again.
    const data = { ...s.data, invoices: s.data.invoices.map(({ outstandingAmount: _o, ...inv }) => inv) };
    await writeSampleFolder(s.folder, data);
    s.rig.sim.resetCounters();
    // The first invoice upsert of tenant gamma waits 1.5 s or more: its page stays under way while the payments start.
    const first = data.invoices.find((i) => i.status !== 'DRAFT')!;
    s.rig.sim.setFaults({ latencyMs: 2, script: holdOne('POST /invoice/create-update', first.id) });
    let finished = false;
    const run = s.rig.sync('gamma', 'full').finally(() => (finished = true));
    const paid = new Map<string, number>();
    for (const p of data.payments) if (!p.deleted) paid.set(p.invoiceId, (paid.get(p.invoiceId) ?? 0) + p.amount);
    let paymentsWhileHeld = 0;
    const pushable = data.invoices.filter((i) => i.status !== 'DRAFT').length;
    while (!finished) {
      const held = (s.rig.sim.counters().requests['POST /invoice/create-update']?.['503'] ?? 0) > 0;
      if (held && s.rig.sim.data('client-gamma').invoices.length < pushable) {
        const totals = await s.rig.app.stores.paymentLedger.totals('gamma', [...paid.keys()]);
        paymentsWhileHeld = Math.max(paymentsWhileHeld, totals.size);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await run).outcome).toBe('succeeded');
    // Before, the payments started only once every invoice was pushed.
    expect(paymentsWhileHeld).toBeGreaterThan(0);
    const inService = new Map(s.rig.sim.data('client-gamma').invoices.map((i) => [i.extPlatformId, i]));
    expect(inService.size).toBe(pushable);
    let withPayments = 0;
    for (const rec of data.invoices) {
      if (rec.status === 'DRAFT') continue;
      const expected = rec.status === 'VOIDED' || rec.status === 'PAID' || rec.deleted ? 0 : outstandingOf(rec, paid.get(rec.id));
      if (paid.has(rec.id) && expected !== rec.total) withPayments += 1;
      expect(inService.get(rec.id)?.outstandingAmount, rec.id).toBeCloseTo(expected, 6);
    }
    expect(withPayments).toBeGreaterThan(5);
  });
});
