/**
 * A campaign's plan: its targets (from the overdue selection, an explicit list or one stored contact) cut into
 * requests, one entry per number, and the skipped contacts. What the service knows is asked through the two
 * functions the caller passes in (the reminder flags of its contacts, one contact by uuid), so this room holds
 * no client. A preview (dry run) marks the numbers the ledger holds as `cooldown` without reserving anything.
 */
import { describeHold, type CallLedger } from './ledger.js';
import { normalisePhone } from './phone.js';
import { planRequests } from './plan.js';
import { selectOverdue } from './source.js';
import type { RecordCache } from '../state/record-cache.js';
import type { CampaignMeta, CallSettings, EntryRecord, OverdueCriteria, RequestRecord, Skip, Target } from './types.js';
import type { StoredPlan } from './campaign-store.js';

/** A stored contact of the service, as far as a single call needs it. */
export interface ServiceContact {
  uuid: string;
  name: string;
  phoneNumber?: string | null | undefined;
  remindersEnabled?: boolean | null | undefined;
}

export interface PlannerDeps {
  cache: Pick<RecordCache, 'scan' | 'getMany'>;
  ledger: Pick<CallLedger, 'peek'>;
  /** Contact uuids whose reminders are disabled in the service. */
  remindersDisabled(): Promise<Set<string>>;
  /** One contact of the service by uuid. */
  contact(uuid: string): Promise<ServiceContact | undefined>;
}

export type PlanSource = { kind: 'overdue'; criteria: OverdueCriteria } | { kind: 'list'; targets: Target[] } | { kind: 'single'; contactUuid: string };

export interface Plan extends StoredPlan {
  counts: NonNullable<CampaignMeta['plan']>;
}

/** Why a plan cannot be made at all (a single call to a contact that cannot be called). */
export class PlanError extends Error {
  readonly code = 'CALL_PLAN_REFUSED';
}

export async function makePlan(deps: PlannerDeps, meta: { id: string; tenant: string; dryRun: boolean }, settings: CallSettings, source: PlanSource, now = Date.now()): Promise<Plan> {
  if (source.kind === 'single') return singlePlan(deps, meta, settings, source.contactUuid, now);
  let targets: Target[];
  let skipped: Skip[] = [];
  let extra: { invoices?: number; contacts?: number } = {};
  if (source.kind === 'overdue') {
    const selection = await selectOverdue(deps.cache, {
      tenant: meta.tenant,
      campaignId: meta.id,
      region: settings.defaultRegion,
      remindersDisabled: await deps.remindersDisabled(),
      criteria: source.criteria,
      currency: settings.currency,
    });
    targets = selection.targets;
    skipped = selection.skipped;
    extra = { invoices: selection.invoices, contacts: selection.contacts };
  } else {
    targets = source.targets;
  }
  const planned = planRequests(targets, settings);
  const requests: RequestRecord[] = planned.map((r) => ({ index: r.index, state: 'planned', contacts: r.targets.map((t) => t.contact), updatedAt: now }));
  const entries: EntryRecord[] = planned.flatMap((r) =>
    r.targets.map((t) => ({
      number: t.number,
      request: r.index,
      state: 'planned' as const,
      label: t.label,
      ...(t.contactUuid !== undefined ? { contactUuid: t.contactUuid } : {}),
      ...(t.contactId !== undefined ? { contactId: t.contactId } : {}),
      at: now,
    })),
  );
  if (meta.dryRun) await previewCooldown(deps, meta.tenant, entries);
  return { requests, entries, skipped, counts: { targets: targets.length, requests: requests.length, skipped: skipped.length, ...extra } };
}

async function singlePlan(deps: PlannerDeps, meta: { id: string; tenant: string; dryRun: boolean }, settings: CallSettings, contactUuid: string, now: number): Promise<Plan> {
  const contact = await deps.contact(contactUuid);
  if (!contact) throw new PlanError(`contact ${contactUuid} is not in the service of tenant ${meta.tenant}`);
  if (contact.remindersEnabled === false) throw new PlanError(`contact ${contactUuid} (${contact.name}) has reminders disabled in the service`);
  const phone = normalisePhone(contact.phoneNumber, settings.defaultRegion);
  if (!phone.ok) throw new PlanError(`contact ${contactUuid} (${contact.name}): ${phone.reason}`);
  const entries: EntryRecord[] = [{ number: phone.e164, request: 0, state: 'planned', label: contact.name, contactUuid: contact.uuid, at: now }];
  if (meta.dryRun) await previewCooldown(deps, meta.tenant, entries);
  return {
    requests: [{ index: 0, state: 'planned', contactUuid: contact.uuid, updatedAt: now }],
    entries,
    skipped: [],
    counts: { targets: 1, requests: 1, skipped: 0 },
  };
}

async function previewCooldown(deps: PlannerDeps, tenant: string, entries: EntryRecord[]): Promise<void> {
  const holds = await deps.ledger.peek(
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
