/**
 * Invoices: create-update, always with extPlatformId and with uuid once known (the service matches on
 * extPlatformId, so a repeat is an update, never a second invoice). An invoice whose contact has no id-map entry
 * yet waits in the pending store (bounded), then is dead-lettered with that reason.
 */
import { NotFoundError } from '../../src/collections/errors.js';
import type { InvoiceUpsert } from '../../src/collections/schemas.js';
import { decideInvoice, type InvoiceDecision, type Pending } from '../../src/mapping/index.js';
import { invoiceRecordSchema, type InvoiceRecord } from '../../src/platforms/records.js';
import type { MirroredInvoice } from '../../src/state/record-mirror.js';
import type { RunContext } from './context.js';
import { inTurns } from './turns.js';
import { pushContacts } from './contacts.js';
import { deadLetter, deadLetterIfRejected, reportBad, resolveDeadLetters } from './dead-letters.js';

/** Pushes one page of invoice records. `fromPending` marks records replayed from the pending store. */
export async function pushInvoices(ctx: RunContext, records: InvoiceRecord[]): Promise<void> {
  if (records.length === 0) return;
  const { stores, mirror } = ctx.services;
  const ids = records.map((r) => r.id);
  const contactIds = [...new Set(records.map((r) => r.contactId))];
  // Contacts of this page still being pushed by this run (the contact listing's last pages): wait for them.
  await ctx.whenPushed('contacts', contactIds);
  const snapshot = ctx.snapshot();
  const [contactStates, states, totals] = await Promise.all([
    stores.records.getMany(ctx.tenant, 'contacts', contactIds),
    stores.records.getMany(ctx.tenant, 'invoices', ids),
    stores.paymentLedger.totals(ctx.tenant, ids),
  ]);
  // Unchanged invoices' cells (a pushed invoice's are written with its id-map entry), and every invoice resolved.
  const mirrored: MirroredInvoice[] = [];
  const resolved: string[] = [];
  const pending: { id: string; record: unknown; firstSeenAt: number; waitingFor: string }[] = [];

  await inTurns(records, (rec) =>
    ctx.serialized('invoices', rec.id, snapshot, async (waited) => {
      const known = waited ? await stores.records.get(ctx.tenant, 'invoices', rec.id) : states.get(rec.id);
      const decision = decideInvoice(rec, { known, contactUuid: contactStates.get(rec.contactId)?.uuid, paymentsTotal: totals.get(rec.id) });
      if (decision.kind === 'pending') {
        pending.push({ id: rec.id, record: rec, firstSeenAt: Date.now(), waitingFor: decision.waitingFor });
        ctx.count('invoices', 'pending');
        return;
      }
      const outcome = await pushOne(ctx, rec, decision);
      if (outcome === undefined) return;
      resolved.push(rec.id);
      if (!outcome.mirrored) mirrored.push(mirroredInvoice(rec, outcome.uuid, outcome.outstanding));
    }),
  );
  await Promise.all([
    mirror.putMany(ctx.tenant, 'invoices', mirrored),
    pending.length > 0 ? stores.pending.add(ctx.tenant, pending) : undefined,
    resolved.length > 0 ? stores.pending.remove(ctx.tenant, resolved) : undefined,
    resolveDeadLetters(ctx, 'invoices', resolved),
  ]);
}

/**
 * The mirror's copy of an invoice pushed as `uuid` with `outstanding` (none: `base`'s pushed amount stays, if it
 * has one). RecordMirror keeps a pushed amount equal to the record's own as absent.
 */
export function mirroredInvoice(base: MirroredInvoice, uuid: string, outstanding: number | undefined): MirroredInvoice {
  return { ...base, uuid, ...(outstanding === undefined ? {} : { pushedOutstanding: outstanding }) };
}

/**
 * Performs an invoice's decision (one with its contact's uuid). Returns its uuid and the outstanding amount
 * pushed, and whether its mirror cells were written (with its id-map entry, when it was pushed), or undefined
 * when it was skipped or dead-lettered.
 */
export async function pushOne(
  ctx: RunContext,
  rec: InvoiceRecord,
  decision: Exclude<InvoiceDecision, Pending>,
): Promise<{ uuid: string; outstanding: number | undefined; mirrored: boolean } | undefined> {
  switch (decision.kind) {
    case 'skip':
      ctx.count('invoices', 'skipped');
      return undefined;
    case 'dead-letter':
      await deadLetter(ctx, 'invoices', rec.id, decision.reason, decision.code, rec);
      return undefined;
    case 'unchanged':
      ctx.count('invoices', 'skipped');
      return { uuid: decision.uuid, outstanding: decision.body.outstandingAmount, mirrored: false };
    default:
      break;
  }
  let uuid: string;
  try {
    uuid = await upsert(ctx, decision.body);
  } catch (err) {
    await deadLetterIfRejected(ctx, 'invoices', rec.id, rec, err);
    return undefined;
  }
  ctx.count('invoices', decision.kind === 'create' ? 'created' : 'updated');
  ctx.noteDropped('invoices', rec.id, decision.dropped);
  const outstanding = decision.body.outstandingAmount;
  const mirror = ctx.services.mirror.segment('invoices', mirroredInvoice(rec, uuid, outstanding));
  await ctx.writer.set('invoices', { id: rec.id, uuid, hash: decision.hash, mirror });
  return { uuid, outstanding, mirrored: true };
}

/** Reads `ids` through the adapter's `readContacts` and pushes them; false when it has none or found nothing. */
async function pushHeldBackContacts(ctx: RunContext, ids: string[]): Promise<boolean> {
  const { adapter } = ctx.services;
  if (adapter.readContacts === undefined) return false;
  const page = await adapter.readContacts(ids, ctx.signal);
  await reportBad(ctx, page.bad);
  if (page.records.length === 0) return false;
  await pushContacts(ctx, page.records.map((rec) => ({ ...rec, customer: true })));
  return true;
}

async function upsert(ctx: RunContext, body: InvoiceUpsert): Promise<string> {
  try {
    return (await ctx.request((call) => ctx.services.client.upsertInvoice(body, call))).uuid;
  } catch (err) {
    if (!(err instanceof NotFoundError) || body.uuid === undefined) throw err;
    // Our uuid is unknown to the service (removed by hand): let it match on extPlatformId or create anew.
    const { uuid: _gone, ...rest } = body;
    return (await ctx.request((call) => ctx.services.client.upsertInvoice(rest, call))).uuid;
  }
}

/**
 * Invoices that waited for their contact: pushed now if the contact has an id-map entry, dead-lettered once
 * they have waited longer than the bound, left waiting otherwise. Contacts the platform's listings held back
 * (not customers there) are asked for by id first and pushed as customers: a receivable invoice makes them one (a
 * voided or deleted one does not: nothing is owed). A voided or deleted invoice whose contact never came is let go at
 * the bound without a dead letter (skipped: nothing to collect, nothing to stop; decision 157).
 */
export async function drainPending(ctx: RunContext): Promise<void> {
  const { stores, settings } = ctx.services;
  const waiting = await stores.pending.list(ctx.tenant);
  if (waiting.length === 0) return;
  const parsed = waiting.map((w) => ({ w, rec: invoiceRecordSchema.safeParse(w.record) }));
  const stopped = (rec: InvoiceRecord): boolean => rec.status === 'VOIDED' || rec.deleted;
  const contactIds = [...new Set(waiting.map((w) => w.waitingFor))];
  let contactStates = await stores.records.getMany(ctx.tenant, 'contacts', contactIds);
  const owed = new Set(parsed.flatMap(({ w, rec }) => (rec.success && !stopped(rec.data) ? [w.waitingFor] : [])));
  const unmapped = contactIds.filter((id) => owed.has(id) && contactStates.get(id)?.uuid === undefined);
  if (unmapped.length > 0 && (await pushHeldBackContacts(ctx, unmapped))) {
    contactStates = await stores.records.getMany(ctx.tenant, 'contacts', contactIds);
  }
  const ready: InvoiceRecord[] = [];
  const expired: string[] = [];
  for (const { w, rec } of parsed) {
    if (!rec.success) {
      expired.push(w.id);
      continue;
    }
    if (contactStates.get(w.waitingFor)?.uuid !== undefined) ready.push(rec.data);
    else if (Date.now() - w.firstSeenAt >= settings.pendingMaxWaitMs) {
      expired.push(w.id);
      if (stopped(rec.data)) {
        ctx.count('invoices', 'skipped');
        continue;
      }
      await deadLetter(
        ctx,
        'invoices',
        w.id,
        `its contact ${w.waitingFor} is not in the service (waited ${Math.round((Date.now() - w.firstSeenAt) / 1000)} s)`,
        'CONTACT_NOT_MAPPED',
        w.record,
      );
    }
  }
  if (expired.length > 0) await stores.pending.remove(ctx.tenant, expired);
  if (ready.length > 0) {
    ctx.uncount('invoices', 'pending', ready.length);
    await pushInvoices(ctx, ready);
  }
}
