/**
 * A dry run predicts what the next sync sends: run a real sync, change the platform's records, take a dry run,
 * then sync and compare what the dry run decided with what the sync did (its counts, the service's write
 * requests, the state it stored and the content hashes in it).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entity } from '../../src/glossary.js';
import type { InvoiceRecord } from '../../src/platforms/records.js';
import { sampleData, type SampleData } from '../../src/sample/generate.js';
import type { RecordState } from '../../src/state/index.js';
import { dryRun, type DryRunDecision, type DryRunReport } from '../../src/sync/dry-run.js';
import { useTestRedis } from '../helpers/redis.js';
import { startRig, type Rig } from '../helpers/rig.js';
import { writeSampleFolder } from '../helpers/sample-folder.js';

const CLIENT = 'client-acme';
const LATER = new Date('2026-11-10T00:00:00Z').getTime();

/** Successful requests of a route at the service. */
function ok(rig: Rig, route: string): number {
  const byStatus = rig.sim.counters().requests[route] ?? {};
  return Object.entries(byStatus).reduce((n, [status, count]) => (status.startsWith('2') ? n + count : n), 0);
}

const ROUTES = ['POST /contact', 'PUT /contact', 'POST /invoice/create-update', 'PUT /invoice/payment/{uuid}'] as const;

describe('a dry run predicts what the next sync does', () => {
  const redis = useTestRedis();
  let rig: Rig;
  let folder: string;
  let data: SampleData;
  let ledgerInvoice: InvoiceRecord;

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'cs-dry-'));
    data = sampleData({ contacts: 150, seed: 23, today: new Date('2026-11-20T00:00:00Z'), updatedAt: new Date('2026-11-01T00:00:00Z') });
    // An invoice whose platform gives no outstanding amount: its balance comes from the payment ledger.
    ledgerInvoice = data.invoices.find((i) => i.status === 'AUTHORISED' && data.payments.some((p) => p.invoiceId === i.id && !p.deleted))!;
    delete ledgerInvoice.outstandingAmount;
    await writeSampleFolder(folder, data);
    rig = await startRig({ redisUrl: redis.url, tenants: [{ id: 'acme', platform: { kind: 'file', path: folder } }], env: { SYNC_PAGE_SIZE: '40' } });
  });
  afterAll(async () => {
    await rig?.close();
    await rm(folder, { recursive: true, force: true });
  });

  async function states(entity: Entity): Promise<Map<string, RecordState>> {
    const ids = data[entity].map((r) => r.id);
    return rig.app.stores.records.getMany('acme', entity, ids);
  }

  it('agrees with the sync on every record: what is created, updated, skipped, left waiting or dead-lettered, and its hash', async () => {
    expect((await rig.sync('acme')).outcome).toBe('succeeded');

    // Changes of every kind, stamped later than the cursor.
    let stamp = 0;
    const touch = <T extends { updatedAt: string }>(r: T): T => ((r.updatedAt = new Date(LATER + (stamp += 1)).toISOString()), r);
    for (const c of data.contacts.filter((_, i) => i % 10 === 0)) touch(c).name = `${c.name} (renamed)`;
    for (const inv of data.invoices.filter((inv, i) => i % 10 === 3 && inv.status === 'AUTHORISED')) touch(inv).dueDate = '2026-12-31';
    const template = data.invoices.find((i) => i.status === 'AUTHORISED')!;
    const invoice = (id: string, contactId: string, over: Partial<InvoiceRecord> = {}): InvoiceRecord =>
      touch({ ...template, id, contactId, number: `N-${id}`, ...over });
    for (const k of [1, 2, 3]) {
      data.contacts.push(touch({ ...data.contacts[k]!, id: `NEW-C-${k}`, name: `New Customer ${k}` }));
      data.invoices.push(invoice(`NEW-I-${k}`, `NEW-C-${k}`));
    }
    data.contacts.push(touch({ ...data.contacts[4]!, id: 'NEW-C-blank', name: '   ' }));
    data.invoices.push(
      invoice('NEW-I-known', data.contacts[5]!.id),
      invoice('NEW-I-waits', 'C-NOWHERE'),
      invoice('NEW-I-draft', 'C-NOWHERE', { status: 'DRAFT' }),
      invoice('NEW-I-blank', data.contacts[6]!.id, { number: '  ' }),
    );
    await writeSampleFolder(folder, data);

    const before = { contacts: await states('contacts'), invoices: await states('invoices'), payments: await states('payments') };
    const routesBefore = Object.fromEntries(ROUTES.map((r) => [r, ok(rig, r)]));
    const writesBefore = rig.sim.counters().writesCommitted;
    const decisions: DryRunDecision[] = [];
    const reports = await dryRun('acme', {
      adapter: rig.app.adapterFor(rig.app.tenant('acme')!),
      stores: rig.app.stores,
      pageSize: rig.env.SYNC_PAGE_SIZE,
      lookbackMs: rig.env.CURSOR_LOOKBACK_S * 1000,
      onDecision: (d) => decisions.push(d),
    });
    expect(rig.sim.counters().writesCommitted, 'a dry run writes nothing').toBe(writesBefore);
    expect(await states('contacts')).toEqual(before.contacts);

    const ids = (entity: Entity, ...kinds: string[]): string[] =>
      decisions.filter((d) => d.entity === entity && kinds.includes(d.decision.kind)).map((d) => d.platformId).sort();
    // The changes above, each decided as the rules say.
    expect(ids('contacts', 'create')).toEqual(['NEW-C-1', 'NEW-C-2', 'NEW-C-3']);
    expect(ids('contacts', 'dead-letter')).toEqual(['NEW-C-blank']);
    expect(ids('contacts', 'update')).toHaveLength(15);
    expect(ids('invoices', 'create')).toEqual(['NEW-I-1', 'NEW-I-2', 'NEW-I-3', 'NEW-I-known']);
    expect(ids('invoices', 'pending')).toEqual(['NEW-I-waits']);
    expect(ids('invoices', 'skip').filter((id) => id.startsWith('NEW-'))).toEqual(['NEW-I-draft']); // with the sample's drafts
    expect(ids('invoices', 'dead-letter')).toEqual(['NEW-I-blank']);
    expect(ids('invoices', 'update').length).toBeGreaterThan(0);
    expect(ids('payments', 'update', 'unlinked', 'skip')).toEqual([]);
    const fromLedger = decisions.find((d): d is Extract<DryRunDecision, { entity: 'invoices' }> => d.entity === 'invoices' && d.platformId === ledgerInvoice.id)?.decision;
    expect(fromLedger).toMatchObject({ kind: 'unchanged' });
    expect(fromLedger?.kind === 'unchanged' && fromLedger.body.outstandingAmount).toBeLessThan(ledgerInvoice.total);

    // The report counts the same decisions.
    const report = (entity: Entity): DryRunReport => reports.find((r) => r.entity === entity)!;
    for (const entity of ['contacts', 'invoices', 'payments'] as const) {
      expect(report(entity), entity).toMatchObject({
        create: ids(entity, 'create').length,
        update: ids(entity, 'update').length,
        skip: ids(entity, 'unchanged').length,
        notPushed: ids(entity, 'skip', 'unlinked').length,
      });
      expect(report(entity).rejected.map((r) => r.platformId).sort()).toEqual(ids(entity, 'dead-letter', 'pending'));
    }
    expect(report('invoices').rejected.find((r) => r.platformId === 'NEW-I-waits')?.reason).toBe('its contact C-NOWHERE is not in the service (it would wait)');

    const run = await rig.sync('acme');
    expect(run.outcome).toBe('partial');

    // The sync did what the dry run said, by its own counts and by the service's.
    for (const entity of ['contacts', 'invoices', 'payments'] as const) {
      expect(run.counts[`${entity}.created`] ?? 0, `${entity} created`).toBe(ids(entity, 'create').length);
      expect(run.counts[`${entity}.updated`] ?? 0, `${entity} updated`).toBe(ids(entity, 'update').length);
      expect(run.counts[`${entity}.skipped`] ?? 0, `${entity} skipped`).toBe(ids(entity, 'unchanged', 'skip').length);
      expect(run.counts[`${entity}.pending`] ?? 0, `${entity} pending`).toBe(ids(entity, 'pending').length);
      expect(run.counts[`${entity}.deadLettered`] ?? 0, `${entity} dead-lettered`).toBe(ids(entity, 'dead-letter').length);
      expect(run.counts[`${entity}.unlinked`] ?? 0, `${entity} unlinked`).toBe(ids(entity, 'unlinked').length);
    }
    const sent = (route: (typeof ROUTES)[number]): number => ok(rig, route) - (routesBefore[route] ?? 0);
    expect(sent('POST /contact')).toBe(ids('contacts', 'create').length);
    expect(sent('PUT /contact')).toBe(ids('contacts', 'update').length);
    expect(sent('POST /invoice/create-update')).toBe(ids('invoices', 'create', 'update').length);
    expect(sent('PUT /invoice/payment/{uuid}')).toBe(0);
    const service = rig.sim.data(CLIENT);
    const inService = new Set([...service.contacts, ...service.invoices].map((r) => r.extPlatformId));
    for (const id of [...ids('contacts', 'create'), ...ids('invoices', 'create')]) expect(inService.has(id), id).toBe(true);
    for (const id of [...ids('contacts', 'dead-letter'), ...ids('invoices', 'dead-letter', 'pending', 'skip')]) expect(inService.has(id), id).toBe(false);

    // The state the sync stored: exactly the records it was told to write changed, each to the predicted hash.
    const standIn = new Set(data.invoices.filter((i) => i.contactId.startsWith('NEW-C-')).map((i) => i.id));
    for (const entity of ['contacts', 'invoices', 'payments'] as const) {
      const after = await states(entity);
      const written = [...after.keys()].filter((id) => JSON.stringify(after.get(id)) !== JSON.stringify(before[entity].get(id))).sort();
      expect(written, `${entity} written`).toEqual(ids(entity, 'create', 'update'));
      for (const d of decisions) {
        if (d.entity !== entity || !('hash' in d.decision) || standIn.has(d.platformId)) continue;
        expect(after.get(d.platformId)?.hash, `${entity} ${d.platformId} (${d.decision.kind})`).toBe(d.decision.hash);
      }
    }
    // Invoices of contacts the run creates were predicted with a stand-in contact uuid; their hash is the real one's.
    expect(standIn.size).toBe(3);
  });
});
