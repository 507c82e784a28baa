/**
 * What a sync would do, without writing anything: reads the platform from the cursors, maps every record
 * and compares it with the stored content hashes. No request to the service, no change in Redis.
 */
import { addMilliseconds } from 'date-fns';
import { ENTITIES, type Entity } from '../../src/glossary.js';
import { contentHash, mapContact, mapInvoice, mapPayment } from '../../src/mapping/index.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../../src/platforms/records.js';
import type { PlatformAdapter } from '../../src/platforms/types.js';
import type { StateStores } from '../../src/state/index.js';

export interface DryRunReport {
  entity: Entity;
  create: number;
  update: number;
  skip: number;
  notPushed: number;
  bad: { place: string; reason: string }[];
  rejected: { platformId: string; reason: string }[];
}

const PLACEHOLDER_UUID = '00000000-0000-4000-8000-000000000000';

export async function dryRun(
  tenant: string,
  deps: { adapter: PlatformAdapter; stores: StateStores; pageSize: number; lookbackMs: number; full?: boolean },
): Promise<DryRunReport[]> {
  const reports: DryRunReport[] = [];
  const plannedContacts = new Set<string>();
  for (const entity of ENTITIES) {
    const report: DryRunReport = { entity, create: 0, update: 0, skip: 0, notPushed: 0, bad: [], rejected: [] };
    const cursor = deps.full ? undefined : (await deps.stores.cursors.get(tenant, entity))?.highWater;
    const since = cursor ? { updatedAt: addMilliseconds(new Date(cursor.updatedAt), -deps.lookbackMs).toISOString(), id: '' } : undefined;
    let pageToken: string | undefined;
    do {
      const page = await deps.adapter.readPage(entity, { pageSize: deps.pageSize, ...(since ? { since } : {}), ...(pageToken ? { pageToken } : {}) });
      pageToken = page.nextPageToken;
      for (const b of page.bad) if (report.bad.length < 1000) report.bad.push({ place: b.place, reason: b.reason });
      const states = await deps.stores.records.getMany(tenant, entity, page.records.map((r) => r.id));
      if (entity === 'contacts') {
        for (const rec of page.records as ContactRecord[]) {
          const m = mapContact(rec);
          const st = states.get(rec.id);
          if (!m.ok) report.rejected.push({ platformId: rec.id, reason: m.reason });
          else if (st?.uuid === undefined) {
            report.create++;
            plannedContacts.add(rec.id);
          }
          else if (st.hash === contentHash(m.body)) report.skip++;
          else report.update++;
        }
      } else if (entity === 'invoices') {
        const recs = page.records as InvoiceRecord[];
        const contacts = await deps.stores.records.getMany(tenant, 'contacts', [...new Set(recs.map((r) => r.contactId))]);
        const totals = await deps.stores.ledger.totals(tenant, recs.map((r) => r.id));
        for (const rec of recs) {
          const contactUuid = contacts.get(rec.contactId)?.uuid ?? (plannedContacts.has(rec.contactId) ? PLACEHOLDER_UUID : undefined);
          const st = states.get(rec.id);
          if (contactUuid === undefined) {
            report.rejected.push({ platformId: rec.id, reason: `its contact ${rec.contactId} is not in the service (it would wait)` });
            continue;
          }
          const pt = totals.get(rec.id);
          const m = mapInvoice(rec, { contactUuid, ...(st?.uuid ? { uuid: st.uuid } : {}), ...(pt === undefined ? {} : { paymentsTotal: pt }) });
          if (m.kind === 'skip') report.notPushed++;
          else if (m.kind === 'reject') report.rejected.push({ platformId: rec.id, reason: m.reason });
          else if (st?.uuid === undefined) report.create++;
          else {
            const { uuid: _u, ...hashed } = m.body;
            if (contentHash(hashed) === st.hash) report.skip++;
            else report.update++;
          }
        }
      } else {
        for (const rec of page.records as PaymentRecord[]) {
          const { body } = mapPayment(rec);
          const st = states.get(rec.id);
          if (st?.hash === contentHash({ ...body, invoiceId: rec.invoiceId, deleted: rec.deleted })) report.skip++;
          else if ((rec.paymentUuid ?? st?.uuid) !== undefined && !rec.deleted) report.update++;
          else report.notPushed++;
        }
      }
    } while (pageToken !== undefined);
    reports.push(report);
  }
  return reports;
}
