/**
 * A campaign's plan: its targets (from the overdue selection, an explicit list or one stored contact) cut into
 * requests, one entry per number, and the skipped contacts. What the service knows is asked through the
 * tenant's client (the reminder flags of its contacts, one contact by uuid: read requests, never a call).
 * A preview (dry run) marks the numbers the call ledger holds as `cooldown` without reserving anything.
 */
import {
  describeHold,
  plannedRecords,
  selectOverdue,
  singleCallRecords,
  type CallLedger,
  type CallSettings,
  type CampaignMeta,
  type EntryRecord,
  type OverdueCriteria,
  type PlannedRecords,
  type ServiceContact,
  type Skip,
  type StoredPlan,
  type Target,
} from '../../src/calls/index.js';
import type { CollectionsClient } from '../../src/collections/client.js';
import type { RecordMirror } from '../../src/state/record-mirror.js';

export interface PlannerDeps {
  mirror: Pick<RecordMirror, 'scan' | 'getMany'>;
  callLedger: Pick<CallLedger, 'peek'>;
  client: Pick<CollectionsClient, 'listAllContacts' | 'listContacts'>;
}

export type PlanSource = { kind: 'overdue'; criteria: OverdueCriteria } | { kind: 'list'; targets: Target[] } | { kind: 'single'; contactUuid: string };

export interface Plan extends StoredPlan {
  counts: NonNullable<CampaignMeta['plan']>;
}

/** The plan of a campaign; PlanError when a single call's contact cannot be called. */
export async function makePlan(deps: PlannerDeps, meta: { id: string; tenant: string; dryRun: boolean }, settings: CallSettings, source: PlanSource, now = Date.now()): Promise<Plan> {
  if (source.kind === 'single') {
    const records = singleCallRecords(source.contactUuid, await serviceContact(deps.client, source.contactUuid), { tenant: meta.tenant, region: settings.defaultRegion, now });
    return finish(deps, meta, records, [], { targets: 1, requests: 1, skipped: 0 });
  }
  if (source.kind === 'list') {
    const records = plannedRecords(source.targets, settings, now);
    return finish(deps, meta, records, [], { targets: source.targets.length, requests: records.requests.length, skipped: 0 });
  }
  const selection = await selectOverdue(deps.mirror, {
    tenant: meta.tenant,
    campaignId: meta.id,
    region: settings.defaultRegion,
    remindersDisabled: await remindersDisabled(deps.client),
    criteria: source.criteria,
    currency: settings.currency,
  });
  const records = plannedRecords(selection.targets, settings, now);
  return finish(deps, meta, records, selection.skipped, {
    targets: selection.targets.length,
    requests: records.requests.length,
    skipped: selection.skipped.length,
    invoices: selection.invoices,
    contacts: selection.contacts,
  });
}

async function finish(deps: PlannerDeps, meta: { tenant: string; dryRun: boolean }, records: PlannedRecords, skipped: Skip[], counts: Plan['counts']): Promise<Plan> {
  if (meta.dryRun) await previewCooldown(deps, meta.tenant, records.entries);
  return { ...records, skipped, counts };
}

/** Contact uuids whose reminders are disabled in the service. */
async function remindersDisabled(client: PlannerDeps['client']): Promise<Set<string>> {
  const off = new Set<string>();
  for await (const c of client.listAllContacts({ remindersEnabled: false })) off.add(c.uuid.toLowerCase());
  return off;
}

/** One contact of the service by uuid. */
async function serviceContact(client: PlannerDeps['client'], uuid: string): Promise<ServiceContact | undefined> {
  const c = (await client.listContacts({ uuid, size: 1 })).items.find((x) => x.uuid.toLowerCase() === uuid.toLowerCase());
  return c && { uuid: c.uuid, name: c.name ?? c.uuid, phoneNumber: c.phoneNumber, remindersEnabled: c.remindersEnabled };
}

async function previewCooldown(deps: PlannerDeps, tenant: string, entries: EntryRecord[]): Promise<void> {
  const holds = await deps.callLedger.peek(
    tenant,
    entries.map((e) => e.number),
  );
  for (const e of entries) {
    const hold = holds.get(e.number);
    if (hold) {
      e.state = 'cooldown';
      e.reason = describeHold(hold);
    }
  }
}
