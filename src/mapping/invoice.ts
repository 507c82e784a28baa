/**
 * Invoice record -> the body of `POST /invoice/create-update`, or why it is not pushed.
 *
 * Decisions (docs/decisions):
 * - DRAFT is skipped, even when deleted (a draft was never pushed, so there is nothing to stop).
 * - VOIDED or deleted: pushed with `outstandingAmount: 0` and `remindersEnabled: false` (no delete endpoint).
 * - PAID: `outstandingAmount: 0`.
 * - AUTHORISED: the platform's own outstanding amount wins (the total when it gives none), unless the payments we
 *   know of say less: max(0, min(outstanding ?? total, total - paymentsTotal)). The periodic reconciliation pass
 *   refreshes it for platforms that do not bump `updatedAt` on partial payments. Float noise from the subtraction
 *   is rounded away at 6 decimals (enough for 3-decimal currencies).
 * - `remindersEnabled` is always sent (true unless voided or deleted), so a restored invoice is re-enabled.
 * - `currencyCode` is not a request field of the service: not sent. Free-text fields are trimmed; empty ones are
 *   not sent. `extPlatformId` is always sent; `uuid` when the id map knows it.
 * - Text over 255 characters (the service's limit) never costs the invoice: `notes` and `description` (prose, whose
 *   beginning still informs) are cut to 255 with an ellipsis; `reference` and `purchaseOrder` (identifiers, wrong
 *   when cut) are left out. Either way the field is listed in `dropped`, which the run report names.
 */
import { invoiceUpsertSchema, type InvoiceUpsert } from '../collections/schemas.js';
import { markChecked, quickChecked } from '../collections/checked.js';
import { describeIssues, type InvoiceRecord } from '../platforms/records.js';
import { checkString, cutText, takeOptional, type DroppedField } from './fields.js';
import { reportedIssues } from '../zod-issues.js';
import type { MapperPush, MapperReject, MapperSkip } from './result.js';

export interface InvoiceContext {
  /** The service's uuid of the invoice's contact (from the id map). */
  contactUuid: string;
  /** The service's uuid of this invoice, when already known. */
  uuid?: string;
  /** The sum of this invoice's known, non-deleted payments. */
  paymentsTotal?: number;
}

/** An invoice is pushed (maybe with text fields left out or cut), skipped as a draft, or rejected. */
export type InvoiceMapperResult = MapperPush<InvoiceUpsert> | MapperSkip<'draft'> | MapperReject;

/** The optional text fields, and what becomes of one over the limit. */
const TEXT_FIELDS = { reference: 'drop', notes: 'cut', description: 'cut', purchaseOrder: 'drop' } as const;
/** The invoice's optional text fields: a push sends null for those the record lacks (docs/decisions). */
export const INVOICE_TEXT_FIELDS = Object.keys(TEXT_FIELDS) as (keyof typeof TEXT_FIELDS)[];

export function mapInvoice(rec: InvoiceRecord, ctx: InvoiceContext): InvoiceMapperResult {
  const built = buildInvoiceBody(rec, ctx);
  if (built.kind !== 'push') return built;
  return checkInvoiceBody(built.body, built.dropped);
}

/**
 * What `mapInvoice` does before its check against the request schema: the body built, not checked yet (the
 * sync's decision checks the body it sends, with its nulls, once: `checkInvoiceBody`).
 */
export function buildInvoiceBody(rec: InvoiceRecord, ctx: InvoiceContext): MapperPush<Record<string, unknown>> | MapperSkip<'draft'> | MapperReject {
  if (rec.status === 'DRAFT') return { kind: 'skip', reason: 'draft' };

  const number = checkString(rec.number);
  if (number.kind !== 'ok') return { kind: 'reject', reason: `number: ${number.kind === 'bad' ? number.reason : 'required'}` };

  const stopped = rec.status === 'VOIDED' || rec.deleted;
  const body: Record<string, unknown> = {
    number: number.value,
    date: rec.date,
    dueDate: rec.dueDate,
    total: rec.total,
    contactUuid: ctx.contactUuid,
    outstandingAmount: stopped || rec.status === 'PAID' ? 0 : outstandingOf(rec, ctx.paymentsTotal),
    extPlatformId: rec.id,
    remindersEnabled: !stopped,
  };
  if (ctx.uuid !== undefined) body['uuid'] = ctx.uuid;
  const dropped: DroppedField[] = [];
  for (const [field, overLimit] of Object.entries(TEXT_FIELDS) as [keyof typeof TEXT_FIELDS, 'drop' | 'cut'][]) {
    const text = checkString(rec[field]);
    if (text.kind === 'bad' && overLimit === 'cut') {
      body[field] = cutText(rec[field] ?? '');
      dropped.push({ field, reason: text.reason, cut: true });
    } else takeOptional(body, field, text, field, dropped);
  }

  return { kind: 'push', body, dropped };
}

/**
 * A safety net: what we send must pass the service's own request schema. The body that passes is frozen and
 * marked checked, so the client sends it without checking it again (checked.ts).
 */
export function checkInvoiceBody(body: Record<string, unknown>, dropped: DroppedField[]): MapperPush<InvoiceUpsert> | MapperReject {
  const quick = quickChecked(invoiceUpsertSchema, body);
  if (quick !== undefined) return { kind: 'push', body: quick, dropped };
  const parsed = invoiceUpsertSchema.safeParse(body);
  if (!parsed.success) return { kind: 'reject', reason: describeIssues(reportedIssues(invoiceUpsertSchema, body)) };
  return { kind: 'push', body: markChecked(invoiceUpsertSchema, parsed.data), dropped };
}

/** The outstanding amount of an AUTHORISED invoice (see the decisions above). */
export function outstandingOf(rec: Pick<InvoiceRecord, 'total' | 'outstandingAmount'>, paymentsTotal: number | undefined): number {
  let amount = rec.outstandingAmount ?? rec.total;
  if (paymentsTotal !== undefined && Number.isFinite(paymentsTotal)) amount = Math.min(amount, rec.total - paymentsTotal);
  return roundAmount(Math.max(0, amount));
}

/** Rounds float noise away (100.1 - 50.05 = 50.050000000000004 -> 50.05). */
export function roundAmount(x: number): number {
  const rounded = Number(x.toFixed(6));
  return Object.is(rounded, -0) ? 0 : rounded;
}
