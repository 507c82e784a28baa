/**
 * From settings and targets to bulk-call requests, pure. Settings are the tenant's `calls` block with a
 * campaign's overrides on top; every request is checked against the contract (bulkCallSchema) here, so the
 * service never sees one it would answer with 422 for its shape.
 */
import { bulkCallSchema, type BulkCall, type BulkCallContact } from '../collections/schemas.js';
import { callSettingsSchema, type CallOverrides, type CallSettings, type Target } from './types.js';

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
