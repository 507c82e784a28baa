/**
 * What a sync would do, without writing anything: reads the platform from the cursors and asks each record's
 * decision (src/mapping/decide.ts, the same the sync performs) of the stored state. No request to the service,
 * no change in Redis.
 *
 * A contact the run would create gives its invoices a stand-in contact uuid, so they count as the sync would
 * push them (after the contact), not as waiting. What a changed payment does to its invoice's balance is not
 * predicted (the sync re-pushes such invoices after the payments).
 */
import { ENTITIES, type Entity } from '../glossary.js';
import { decideContact, decideInvoice, decidePayment, type ContactDecision, type InvoiceDecision, type PaymentDecision } from '../mapping/index.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../platforms/records.js';
import type { Page, PlatformAdapter } from '../platforms/types.js';
import type { StateStores } from '../state/index.js';
import { readFrom } from './read-from.js';

export interface DryRunReport {
  entity: Entity;
  create: number;
  update: number;
  /** Unchanged: the stored content hash is the one the sync would send. */
  skip: number;
  /** Not pushed by a rule: drafts, invoices voided before they were pushed, unlinked or deleted payments. */
  notPushed: number;
  bad: { place: string; reason: string }[];
  /** Records the sync would dead-letter, or (invoices) leave waiting for their contact. */
  rejected: { platformId: string; reason: string }[];
}

/** One record's decision, as the dry run found it. */
export type DryRunDecision =
  | { entity: 'contacts'; platformId: string; decision: ContactDecision }
  | { entity: 'invoices'; platformId: string; decision: InvoiceDecision }
  | { entity: 'payments'; platformId: string; decision: PaymentDecision };

export interface DryRunDeps {
  adapter: PlatformAdapter;
  stores: StateStores;
  pageSize: number;
  lookbackMs: number;
  /** As a full run: every record, not only those from the cursors on. */
  full?: boolean;
  /** Called with every record's decision (the report only counts them). */
  onDecision?: (d: DryRunDecision) => void;
}

const STAND_IN_CONTACT_UUID = '00000000-0000-4000-8000-000000000000';
const MAX_BAD = 1000;

export async function dryRun(tenant: string, deps: DryRunDeps): Promise<DryRunReport[]> {
  const reports: DryRunReport[] = [];
  const plannedContacts = new Set<string>();
  for (const entity of ENTITIES) {
    const report: DryRunReport = { entity, create: 0, update: 0, skip: 0, notPushed: 0, bad: [], rejected: [] };
    const since = deps.full ? undefined : readFrom((await deps.stores.cursors.get(tenant, entity))?.highWater, deps.lookbackMs);
    let pageToken: string | undefined;
    do {
      const page = await deps.adapter.readPage(entity, { pageSize: deps.pageSize, ...(since ? { since } : {}), ...(pageToken ? { pageToken } : {}) });
      pageToken = page.nextPageToken;
      for (const b of page.bad) if (report.bad.length < MAX_BAD) report.bad.push({ place: b.place, reason: b.reason });
      const decisions = await decidePage(tenant, deps.stores, entity, page.records, plannedContacts);
      for (const d of decisions) {
        tally(report, d);
        deps.onDecision?.(d);
      }
    } while (pageToken !== undefined);
    reports.push(report);
  }
  return reports;
}

/** The decisions of one page, from the state as stored. `plannedContacts` collects the contacts it would create. */
async function decidePage(tenant: string, stores: StateStores, entity: Entity, records: Page<Entity>['records'], plannedContacts: Set<string>): Promise<DryRunDecision[]> {
  const states = await stores.records.getMany(tenant, entity, records.map((r) => r.id));
  if (entity === 'contacts') {
    return (records as ContactRecord[]).map((rec) => {
      const decision = decideContact(rec, states.get(rec.id));
      if (decision.kind === 'create') plannedContacts.add(rec.id);
      return { entity, platformId: rec.id, decision };
    });
  }
  if (entity === 'invoices') {
    const recs = records as InvoiceRecord[];
    const [contacts, totals] = await Promise.all([
      stores.records.getMany(tenant, 'contacts', [...new Set(recs.map((r) => r.contactId))]),
      stores.paymentLedger.totals(tenant, recs.map((r) => r.id)),
    ]);
    return recs.map((rec) => {
      const contactUuid = contacts.get(rec.contactId)?.uuid ?? (plannedContacts.has(rec.contactId) ? STAND_IN_CONTACT_UUID : undefined);
      const decision = decideInvoice(rec, { known: states.get(rec.id), contactUuid, paymentsTotal: totals.get(rec.id) });
      return { entity, platformId: rec.id, decision };
    });
  }
  return (records as PaymentRecord[]).map((rec) => ({ entity: 'payments', platformId: rec.id, decision: decidePayment(rec, states.get(rec.id)) }));
}

function tally(report: DryRunReport, { platformId, decision }: DryRunDecision): void {
  switch (decision.kind) {
    case 'create':
      report.create += 1;
      break;
    case 'update':
      report.update += 1;
      break;
    case 'unchanged':
      report.skip += 1;
      break;
    case 'skip':
    case 'unlinked':
      report.notPushed += 1;
      break;
    case 'pending':
      report.rejected.push({ platformId, reason: `its contact ${decision.waitingFor} is not in the service (it would wait)` });
      break;
    case 'dead-letter':
      report.rejected.push({ platformId, reason: decision.reason });
      break;
  }
}
