/**
 * From settings and targets to bulk-call requests and a campaign's stored plan, pure. Settings are the tenant's `calls` block with a
 * campaign's overrides on top; every request is checked against the contract (bulkCallSchema) here, so the
 * service never sees one it would answer with 422 for its shape.
 */
import { bulkCallSchema, type BulkCall, type BulkCallContact } from '../collections/schemas.js';
import { normalisePhone } from './phone.js';
import { callSettingsSchema, type CallOverrides, type CallSettings, type EntryRecord, type RequestRecord, type Target } from './types.js';

export const DEFAULT_CURRENCY = 'SAR';

/** What a tenant's `calls` block holds (structurally; the config room is not imported here). */
export interface TenantCallDefaults {
  defaultRegion: string;
  aiSettingsTemplateId?: string | null | undefined;
  updateExisting?: boolean | undefined;
  countryCode?: string | null | undefined;
  batchSize?: number | null | undefined;
  requestSize: number;
}

export type SettingsCheck = { ok: true; settings: CallSettings } | { ok: false; problems: { field: string; message: string }[] };

/** The tenant's defaults with `overrides` on top (an override of `undefined` keeps the tenant's value). */
export function resolveSettings(tenant: TenantCallDefaults, overrides: CallOverrides = {}): SettingsCheck {
  const merged: Record<string, unknown> = { currency: DEFAULT_CURRENCY };
  for (const [k, v] of Object.entries(tenant)) if (v !== undefined) merged[k] = v;
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) merged[k] = v;
  const parsed = callSettingsSchema.safeParse(merged);
  if (parsed.success) return { ok: true, settings: parsed.data };
  return {
    ok: false,
    problems: parsed.error.issues.map((i) => {
      const field = i.path.join('.') || '(settings)';
      const value = merged[field];
      return { field, message: `${i.message}${typeof value === 'string' || typeof value === 'number' ? ` (got "${value}")` : ''}` };
    }),
  };
}

/** Consecutive slices of `requestSize` targets. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

export type BodyCheck = { ok: true; body: BulkCall } | { ok: false; problem: string };

/** The bulk-call request for `contacts` under `settings`, checked against the contract. */
export function requestBody(contacts: readonly BulkCallContact[], settings: CallSettings): BodyCheck {
  const body: BulkCall = { contacts: [...contacts] };
  if (settings.aiSettingsTemplateId != null) body.aiSettingsTemplateId = settings.aiSettingsTemplateId;
  if (settings.updateExisting !== undefined) body.updateExisting = settings.updateExisting;
  if (settings.countryCode != null) body.countryCode = settings.countryCode;
  if (settings.batchSize != null) body.batchSize = settings.batchSize;
  const parsed = bulkCallSchema.safeParse(body);
  if (parsed.success) return { ok: true, body: parsed.data };
  return { ok: false, problem: parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ') };
}

/** The targets as planned requests of at most `requestSize` contacts each. */
export function planRequests(targets: readonly Target[], settings: CallSettings): { index: number; targets: Target[] }[] {
  return chunk(targets, settings.requestSize).map((t, index) => ({ index, targets: t }));
}

/** The stored requests and entries of a plan: every request and every number `planned`. */
export interface PlannedRecords {
  requests: RequestRecord[];
  entries: EntryRecord[];
}

/** The targets cut into requests of at most `requestSize` contacts, one entry per number. */
export function plannedRecords(targets: readonly Target[], settings: CallSettings, now: number): PlannedRecords {
  const planned = planRequests(targets, settings);
  return {
    requests: planned.map((r) => ({ index: r.index, state: 'planned', contacts: r.targets.map((t) => t.contact), updatedAt: now })),
    entries: planned.flatMap((r) =>
      r.targets.map((t) => ({
        number: t.number,
        request: r.index,
        state: 'planned' as const,
        label: t.label,
        ...(t.contactUuid !== undefined ? { contactUuid: t.contactUuid } : {}),
        ...(t.contactId !== undefined ? { contactId: t.contactId } : {}),
        at: now,
      })),
    ),
  };
}

/** A stored contact of the service, as far as a single call needs it. */
export interface ServiceContact {
  uuid: string;
  name: string;
  phoneNumber?: string | null | undefined;
  remindersEnabled?: boolean | null | undefined;
}

/** Why a plan cannot be made at all (a single call to a contact that cannot be called). */
export class PlanError extends Error {
  readonly code = 'CALL_PLAN_REFUSED';
}

/** The one request and entry of a single call to `contact` (as the service has it); PlanError when it cannot be called. */
export function singleCallRecords(contactUuid: string, contact: ServiceContact | undefined, o: { tenant: string; region: string; now: number }): PlannedRecords {
  if (!contact) throw new PlanError(`contact ${contactUuid} is not in the service of tenant ${o.tenant}`);
  if (contact.remindersEnabled === false) throw new PlanError(`contact ${contactUuid} (${contact.name}) has reminders disabled in the service`);
  const phone = normalisePhone(contact.phoneNumber, o.region);
  if (!phone.ok) throw new PlanError(`contact ${contactUuid} (${contact.name}): ${phone.reason}`);
  return {
    requests: [{ index: 0, state: 'planned', contactUuid: contact.uuid, updatedAt: o.now }],
    entries: [{ number: phone.e164, request: 0, state: 'planned', label: contact.name, contactUuid: contact.uuid, at: o.now }],
  };
}
