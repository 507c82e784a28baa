/**
 * Decisions: what a sync does with one record, given what the state says of it. One function per entity, called
 * by the sync's pushes (jobs/sync) and by the dry run (src/sync/dry-run.ts), so a dry run predicts what a sync
 * sends. Pure: the caller reads the state, passes it in as plain values, and performs the decision (requests,
 * writes, counts).
 *
 * Each entity's content hash is taken here and nowhere else:
 * - contact: the POST body (an update PUTs the same fields with the uuid, and null for the optional fields the
 *   record lacks);
 * - invoice: the create-update body without `uuid` (the id map's, not content) and without the nulls sent for
 *   its absent text fields;
 * - payment: the PUT body with its invoice and whether it is deleted (both move the invoice's balance).
 * The nulls an update sends follow from the hashed body (a field removed changes it), so no memory of what was
 * pushed before is needed, and the hashes stored before nulls were sent still match: an upgrade re-pushes nothing.
 */
import type { ContactCreate, ContactUpdate, InvoiceUpsert, PaymentUpdate } from '../collections/schemas.js';
import type { ContactRecord, InvoiceRecord, PaymentRecord } from '../platforms/records.js';
import { buildContactBody, checkContactBody, contactUpdateBody } from './contact.js';
import { contentHash } from './content-hash.js';
import { withNulls, type DroppedField } from './fields.js';
import { buildInvoiceBody, checkInvoiceBody, INVOICE_TEXT_FIELDS } from './invoice.js';
import { mapPayment } from './payment.js';
import type { MapperPush, MapperReject, MapperSkip } from './result.js';

/** What the state holds of a record: its uuid in the id map and the content hash last pushed (either may be absent). */
export interface IdMapEntry {
  uuid?: string;
  hash?: string;
}

/**
 * Not in the service yet: POST (contacts) or create-update without uuid (invoices). `dropped`: the optional
 * fields the body leaves out or cuts (the mapper's), for the run report once it is sent.
 */
export interface Create<Body> {
  kind: 'create';
  body: Body;
  hash: string;
  dropped: DroppedField[];
}

/** In the service, and its content changed: send `body` for `uuid`. */
export interface Update<Body> {
  kind: 'update';
  uuid: string;
  body: Body;
  hash: string;
  dropped: DroppedField[];
}

/** In the service with this very content: no request. */
export interface Unchanged<Body> {
  kind: 'unchanged';
  uuid: string;
  body: Body;
  hash: string;
}

/** The mapper cannot build it: dead-lettered with the reason. */
export interface DeadLetter {
  kind: 'dead-letter';
  reason: string;
  code: 'MAPPING_REJECTED';
}

/** An invoice whose contact has no uuid yet: it waits for it (bounded by PENDING_MAX_WAIT_S). */
export interface Pending {
  kind: 'pending';
  waitingFor: string;
}

export type ContactDecision = Create<ContactCreate> | Update<ContactUpdate> | Unchanged<ContactCreate> | MapperSkip<'not a customer'> | DeadLetter;

export type InvoiceDecision =
  | Create<InvoiceUpsert>
  | Update<InvoiceUpsert>
  | Unchanged<InvoiceUpsert>
  | MapperSkip<'draft'>
  | Pending
  | DeadLetter;

/**
 * A payment is only ever updated (the service has no payment create or delete). A changed payment whose service
 * id is unknown is `unlinked`, a deleted one is skipped; both keep their hash, and their invoice's balance is
 * what changes.
 */
export type PaymentDecision =
  | Update<PaymentUpdate>
  | { kind: 'unchanged'; hash: string }
  | { kind: 'skip'; reason: 'deleted'; hash: string }
  | { kind: 'unlinked'; hash: string };

/** What an invoice's decision depends on besides the record. */
export interface InvoiceState {
  known?: IdMapEntry | undefined;
  /** The contact's uuid from the id map (a dry run passes a stand-in for a contact it would create). */
  contactUuid?: string | undefined;
  /** The sum of the invoice's known, non-deleted payments (the payment ledger). */
  paymentsTotal?: number | undefined;
}

export function decideContact(rec: ContactRecord, known: IdMapEntry | undefined): ContactDecision {
  // Not a customer on its platform and not in the service: nobody to collect from (a Xero supplier). A contact a
  // receivable invoice needs comes as a customer (jobs/sync); one in the service stays and is kept up to date.
  if (rec.customer === false && known?.uuid === undefined) return { kind: 'skip', reason: 'not a customer' };
  const built = buildContactBody(rec);
  if (built.kind === 'reject') return deadLetter(built);
  const hash = contentHash(built.body);
  // Unchanged: nothing is sent, so the body is not checked (it was when this content was pushed).
  if (known?.uuid !== undefined && known.hash === hash) return { kind: 'unchanged', uuid: known.uuid, body: built.body as ContactCreate, hash };
  const mapped = checkContactBody(built.body, built.dropped);
  if (mapped.kind === 'reject') return deadLetter(mapped);
  const decision = byIdMap(mapped, hash, known);
  if (decision.kind !== 'update') return decision;
  return { ...decision, body: contactUpdateBody(decision.body, decision.uuid) };
}

export function decideInvoice(rec: InvoiceRecord, { known, contactUuid, paymentsTotal }: InvoiceState): InvoiceDecision {
  if (contactUuid === undefined) {
    if (rec.status === 'DRAFT') return { kind: 'skip', reason: 'draft' };
    // Voided or deleted ones wait too (decision 157): pushed (stopped) once their contact is in the service, as they
    // are when it already is, so what reaches the service never depends on when a contact's create settled.
    return { kind: 'pending', waitingFor: rec.contactId };
  }
  const built = buildInvoiceBody(rec, {
    contactUuid,
    ...(known?.uuid === undefined ? {} : { uuid: known.uuid }),
    ...(paymentsTotal === undefined ? {} : { paymentsTotal }),
  });
  if (built.kind === 'skip') return built;
  if (built.kind === 'reject') return deadLetter(built);
  const { body, dropped } = built;
  // The hash is of the body without its nulls and without `uuid` (canonical JSON skips an undefined value: no copy
  // without it when there is none).
  const hash = contentHash(body['uuid'] === undefined ? body : { ...body, uuid: undefined });
  // Nulls on every push, a create too: the create-update may match an invoice the service already holds.
  const sent = withNulls(body, INVOICE_TEXT_FIELDS);
  // Unchanged: nothing is sent, so the body is not checked (it was when this content was pushed). Otherwise the
  // body sent is checked against the request schema here, once (the client does not check it again).
  if (known?.uuid !== undefined && known.hash === hash) return { kind: 'unchanged', uuid: known.uuid, body: sent as InvoiceUpsert, hash };
  const checked = checkInvoiceBody(sent, dropped);
  if (checked.kind === 'reject') return deadLetter(checked);
  return byIdMap(checked, hash, known);
}

export function decidePayment(rec: PaymentRecord, known: IdMapEntry | undefined): PaymentDecision {
  const { body, dropped } = mapPayment(rec);
  const hash = contentHash({ ...body, invoiceId: rec.invoiceId, deleted: rec.deleted });
  if (known?.hash === hash) return { kind: 'unchanged', hash };
  const uuid = rec.paymentUuid ?? known?.uuid;
  if (uuid === undefined) return { kind: 'unlinked', hash };
  if (rec.deleted) return { kind: 'skip', reason: 'deleted', hash };
  return { kind: 'update', uuid, body, hash, dropped };
}

function byIdMap<Body>({ body, dropped }: MapperPush<Body>, hash: string, known: IdMapEntry | undefined): Create<Body> | Update<Body> | Unchanged<Body> {
  if (known?.uuid === undefined) return { kind: 'create', body, hash, dropped };
  if (known.hash === hash) return { kind: 'unchanged', uuid: known.uuid, body, hash };
  return { kind: 'update', uuid: known.uuid, body, hash, dropped };
}

function deadLetter(rejected: MapperReject): DeadLetter {
  return { kind: 'dead-letter', reason: rejected.reason, code: 'MAPPING_REJECTED' };
}
