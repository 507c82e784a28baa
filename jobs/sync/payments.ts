/**
 * Payments: the interface has no payment create, so a payment is updated (PUT /invoice/payment/{uuid}) only
 * when the service's id is known (`paymentUuid` or a stored id-map entry); others are listed in the run's report
 * as unlinked. Every payment change also refreshes its invoice's outstanding amount through create-update.
 */
import { NotFoundError } from '../../src/collections/errors.js';
import { decideInvoice, decidePayment } from '../../src/mapping/index.js';
import type { PaymentRecord } from '../../src/platforms/records.js';
import type { MirroredInvoice } from '../../src/state/record-mirror.js';
import type { RunContext } from './context.js';
import { inTurns } from './turns.js';
import { deadLetterIfRejected, resolveDeadLetters } from './dead-letters.js';
import { mirroredInvoice, pushOne } from './invoices.js';

export async function pushPayments(ctx: RunContext, records: PaymentRecord[]): Promise<void> {
  if (records.length === 0) return;
  const { stores } = ctx.services;
  await stores.paymentLedger.setMany(
    ctx.tenant,
    records.map((r) => ({ invoiceId: r.invoiceId, paymentId: r.id, amount: r.amount, deleted: r.deleted })),
  );
  const snapshot = ctx.snapshot();
  const states = await stores.records.getMany(ctx.tenant, 'payments', records.map((r) => r.id));
  const touchedInvoices = new Set<string>();
  // Payments whose content is settled now: updated, unchanged (a payment's hash is stored only once its content is
  // settled, never by a dead letter), or with nothing a request could update (unlinked, deleted). Their dead
  // letters end: a replay of an older content would only undo the newer one.
  const settled: string[] = [];

  await inTurns(records, (rec) =>
    ctx.serialized('payments', rec.id, snapshot, async (waited) => {
      const known = waited ? await stores.records.get(ctx.tenant, 'payments', rec.id) : states.get(rec.id);
      const decision = decidePayment(rec, known);
      if (decision.kind === 'unchanged') {
        ctx.count('payments', 'skipped');
        settled.push(rec.id);
        return;
      }
      touchedInvoices.add(rec.invoiceId);
      if (decision.kind !== 'update') {
        // Nothing to update in the service (no id known, or deleted: there is no delete endpoint); the
        // invoice's balance below is what changes.
        if (decision.kind === 'unlinked') {
          ctx.count('payments', 'unlinked');
          if (ctx.unlinkedPayments.length < 1000) ctx.unlinkedPayments.push(rec.id);
        } else ctx.count('payments', 'skipped');
        await ctx.writer.set('payments', { id: rec.id, hash: decision.hash });
        settled.push(rec.id);
        return;
      }
      const { uuid, body, hash } = decision;
      try {
        await ctx.request((call) => ctx.services.client.updatePayment(uuid, body, call));
      } catch (err) {
        if (err instanceof NotFoundError) {
          ctx.count('payments', 'unlinked');
          ctx.note(`payments ${rec.id}: the service has no payment ${uuid}`);
          if (ctx.unlinkedPayments.length < 1000) ctx.unlinkedPayments.push(rec.id);
          await ctx.writer.set('payments', { id: rec.id, hash });
          settled.push(rec.id);
          return;
        }
        await deadLetterIfRejected(ctx, 'payments', rec.id, rec, err);
        return;
      }
      ctx.count('payments', 'updated');
      await ctx.writer.set('payments', { id: rec.id, uuid, hash });
      settled.push(rec.id);
    }),
  );
  await resolveDeadLetters(ctx, 'payments', settled);
  // An invoice still being pushed by this run (the invoice listing's last pages) read its balance before these
  // payments were in the ledger: it is pushed again once its page ends (and mirrored).
  await ctx.whenPushed('invoices', touchedInvoices);
  await refreshInvoices(ctx, [...touchedInvoices]);
}

/** Re-pushes invoices whose balance may have changed (payments, reconciliation), from the mirrored records. */
export async function refreshInvoices(ctx: RunContext, invoiceIds: string[]): Promise<void> {
  if (invoiceIds.length === 0) return;
  const { stores, mirror } = ctx.services;
  const refreshSnapshot = ctx.snapshot();
  // The mirror and the id map are segments of the same packed records: one read for both.
  const [{ items: invoices, states }, totals] = await Promise.all([
    mirror.getManyWithState(ctx.tenant, 'invoices', invoiceIds),
    stores.paymentLedger.totals(ctx.tenant, invoiceIds),
  ]);
  const contactStates = await stores.records.getMany(ctx.tenant, 'contacts', [...new Set([...invoices.values()].map((i) => i.contactId))]);
  const updated: MirroredInvoice[] = [];
  await inTurns([...invoices.values()], (inv) =>
    ctx.serialized('invoices', inv.id, refreshSnapshot, async (waited) => {
      const contactUuid = contactStates.get(inv.contactId)?.uuid;
      const known = waited ? await stores.records.get(ctx.tenant, 'invoices', inv.id) : states.get(inv.id);
      if (contactUuid === undefined || known?.uuid === undefined) return;
      const { uuid: _u, pushedOutstanding: _p, ...rec } = inv;
      const decision = decideInvoice(rec, { known, contactUuid, paymentsTotal: totals.get(inv.id) });
      if (decision.kind === 'pending') return; // not with a contact uuid; narrows the type
      const out = await pushOne(ctx, rec, decision);
      // A pushed invoice's mirror was written with its id-map entry; an unchanged one's again only when what it
      // says of the push changed. A pushed amount equal to the record's own is kept as absent (RecordMirror;
      // src/calls reads it so too).
      if (out && !out.mirrored && (out.uuid !== inv.uuid || out.outstanding !== (inv.pushedOutstanding ?? inv.outstandingAmount))) {
        updated.push(mirroredInvoice(inv, out.uuid, out.outstanding));
      }
    }),
  );
  if (updated.length > 0) await mirror.putMany(ctx.tenant, 'invoices', updated);
}
