/**
 * The words and stored shapes of calls. A campaign is one run of calls for one tenant (an overdue selection,
 * an explicit list, or a single call); a target is one number to call with its bulk-call contact; a request
 * is one bulk (or single) call request of the campaign; an entry is the state of one number in one campaign.
 * Everything read back from Redis goes through these schemas.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { bulkCallContactSchema, uuid } from '../collections/schemas.js';

export const campaignIdSchema = z.string().regex(/^[a-z][a-z0-9-]{2,80}$/, 'lower-case letters, digits and -, starting with a letter');

/** `cmp-20261120-081500-3fa2`: sortable, readable, no colon (a BullMQ job id part). */
export function newCampaignId(kind: 'cmp' | 'one' | 'dry', now = new Date()): string {
  const stamp = now.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
  return `${kind}-${stamp}-${randomBytes(3).toString('hex')}`;
}

/** Why a contact or row is left out of a campaign. */
export const skipReasonSchema = z.enum([
  'no-phone',
  'invalid-phone',
  'deleted',
  'not-in-service',
  'reminders-disabled',
  'duplicate-number',
  'invalid-entry',
]);
export type SkipReason = z.infer<typeof skipReasonSchema>;

export const skipSchema = z.object({
  /** The contact's platform id, or `row 7` for an explicit list. */
  who: z.string(),
  name: z.string().optional(),
  reason: skipReasonSchema,
  detail: z.string(),
});
export type Skip = z.infer<typeof skipSchema>;

/** One number to call and the bulk-call contact that calls it (numberToCall is E.164). */
export const targetSchema = z.object({
  number: z.string(),
  label: z.string(),
  contactUuid: uuid.optional(),
  contactId: z.string().optional(),
  contact: bulkCallContactSchema,
});
export type Target = z.infer<typeof targetSchema>;

/** Call settings of a campaign: the tenant's `calls` block with the campaign's overrides applied. */
export const callSettingsSchema = z.object({
  defaultRegion: z.string().regex(/^[A-Z]{2}$/),
  aiSettingsTemplateId: uuid.nullable().optional(),
  updateExisting: z.boolean().optional(),
  countryCode: z.string().regex(/^[A-Z]{2}$/).nullable().optional(),
  batchSize: z.number().int().min(10).max(1000).nullable().optional(),
  requestSize: z.number().int().min(1).max(1000),
  /** Currency of invoices that carry none, for `amountDue`. */
  currency: z.string().regex(/^[A-Z]{3}$/),
});
export type CallSettings = z.infer<typeof callSettingsSchema>;

/** What a campaign may override (CLI flags, job data). */
export const callOverridesSchema = callSettingsSchema.partial();
export type CallOverrides = z.infer<typeof callOverridesSchema>;

export const overdueCriteriaSchema = z.object({
  /** Days past the due date, at least. */
  overdueDays: z.number().int().min(0).max(3650),
  /** Outstanding amount of an invoice, at least (and always more than 0). */
  minAmount: z.number().min(0).default(0),
  /** The day the campaign counts from (YYYY-MM-DD, UTC); the day it is planned when absent. */
  asOf: z.iso.date().optional(),
});
export type OverdueCriteria = z.infer<typeof overdueCriteriaSchema>;

export const campaignStatusSchema = z.enum(['queued', 'running', 'done', 'cancelled', 'failed', 'previewed']);
export type CampaignStatus = z.infer<typeof campaignStatusSchema>;
export const FINAL_STATUSES: readonly CampaignStatus[] = ['done', 'cancelled', 'failed', 'previewed'];

export const campaignMetaSchema = z.object({
  id: campaignIdSchema,
  tenant: z.string(),
  source: z.enum(['overdue', 'list', 'single']),
  dryRun: z.boolean(),
  createdAt: z.number(),
  status: campaignStatusSchema,
  criteria: overdueCriteriaSchema.optional(),
  settings: callSettingsSchema.optional(),
  /** Set once the campaign's plan is stored: what the selection found. */
  plan: z
    .object({
      targets: z.number().int(),
      requests: z.number().int(),
      skipped: z.number().int(),
      invoices: z.number().int().optional(),
      contacts: z.number().int().optional(),
    })
    .optional(),
  startedAt: z.number().optional(),
  finishedAt: z.number().optional(),
  /** Why the campaign failed as a whole (a bad template, a contact not found, attempts spent). */
  error: z.string().optional(),
});
export type CampaignMeta = z.infer<typeof campaignMetaSchema>;

/**
 * A request's life: planned -> sending -> sent | unknown | failed, or planned -> skipped (every number in
 * cooldown) | cancelled. `sending` is written before the request goes out: a campaign that finds it on a
 * re-run cannot know whether the request went out, so it becomes `unknown` and is never sent again.
 */
export const requestStateSchema = z.enum(['planned', 'sending', 'sent', 'unknown', 'failed', 'skipped', 'cancelled']);
export type RequestState = z.infer<typeof requestStateSchema>;

export const requestRecordSchema = z.object({
  index: z.number().int().min(0),
  state: requestStateSchema,
  /** Bulk: the contacts planned for this request; single: the contact uuid to call. */
  contacts: z.array(bulkCallContactSchema).optional(),
  contactUuid: uuid.optional(),
  /** The numbers in the request as sent (after cooldown refusals). */
  sent: z.array(z.string()).optional(),
  owner: z.string().optional(),
  updatedAt: z.number(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type RequestRecord = z.infer<typeof requestRecordSchema>;

/**
 * An entry's life: planned -> called | unknown | failed | cooldown (refused: called recently) | cancelled;
 * unknown -> confirmed (an operator says the call happened) | released (it did not).
 */
export const entryStateSchema = z.enum(['planned', 'called', 'unknown', 'failed', 'cooldown', 'cancelled', 'confirmed', 'released']);
export type EntryState = z.infer<typeof entryStateSchema>;

export const entryRecordSchema = z.object({
  number: z.string(),
  request: z.number().int().min(0),
  state: entryStateSchema,
  label: z.string(),
  contactUuid: z.string().optional(),
  contactId: z.string().optional(),
  callUuid: z.string().optional(),
  reason: z.string().optional(),
  at: z.number(),
});
export type EntryRecord = z.infer<typeof entryRecordSchema>;

/** A campaign's account: who was called, who was left out and why, what is unknown. */
export interface CampaignReport {
  campaign: CampaignMeta;
  counts: Record<EntryState, number> & { skipped: number };
  skipped: Skip[];
  entries: EntryRecord[];
}
