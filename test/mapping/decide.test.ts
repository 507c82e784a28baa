import { describe, expect, it } from 'vitest';
import { CLEARABLE_CONTACT_FIELDS, contactUpdateSchema, invoiceUpsertSchema } from '../../src/collections/schemas.js';
import { contentHash, decideContact, decideInvoice, decidePayment, mapContact, mapInvoice, type IdMapEntry } from '../../src/mapping/index.js';
import { contactRecordSchema, invoiceRecordSchema, paymentRecordSchema } from '../../src/platforms/records.js';
import { decodeHash } from '../../src/state/compact.js';

const CONTACT = '3f1c2a4e-8b7d-4c61-9a0e-5d2f6b8c9e01';
const INVOICE = '7a9e3c1b-2d4f-4e6a-8b0c-1d2e3f4a5b6c';
const PAYMENT = '5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e';

const contact = (over: Record<string, unknown> = {}) =>
  contactRecordSchema.parse({ id: 'C-1', updatedAt: '2026-01-01T00:00:00Z', name: 'Acme Trading', city: 'Riyadh', ...over });
const invoice = (over: Record<string, unknown> = {}) =>
  invoiceRecordSchema.parse({
    id: 'INV-1', contactId: 'C-1', updatedAt: '2026-01-01T00:00:00Z', status: 'AUTHORISED',
    number: 'INV-0001', date: '2026-01-01', dueDate: '2026-01-31', total: 1000, ...over,
  });
const payment = (over: Record<string, unknown> = {}) =>
  paymentRecordSchema.parse({ id: 'P-1', invoiceId: 'INV-1', updatedAt: '2026-02-01T00:00:00Z', amount: 250, date: '2026-02-01', ...over });

/** The hash a decision made with no state gives: what the sync stores once it has pushed the record. */
function hashOf(d: { kind: string; hash?: string }): string {
  if (d.hash === undefined) throw new Error(`no hash in ${JSON.stringify(d)}`);
  return d.hash;
}

describe('decideContact', () => {
  it('creates a contact the id map does not know, with the mapped body and its content hash', () => {
    const rec = contact();
    const d = decideContact(rec, undefined);
    const mapped = mapContact(rec);
    if (mapped.kind !== 'push') throw new Error(mapped.reason);
    expect(d).toEqual({ kind: 'create', body: mapped.body, hash: contentHash(mapped.body), dropped: [] });
    // A hash without a uuid (a crash between the two is not possible, but the state allows it) still creates.
    expect(decideContact(rec, { hash: hashOf(d) }).kind).toBe('create');
  });

  it('skips a known contact whose content hash is unchanged, a newer updatedAt alone included', () => {
    const h = hashOf(decideContact(contact(), undefined));
    const d = decideContact(contact({ updatedAt: '2026-06-01T00:00:00Z' }), { uuid: CONTACT, hash: h });
    expect(d).toMatchObject({ kind: 'unchanged', uuid: CONTACT, hash: h });
  });

  it('updates a known contact whose content changed, with its uuid and the new hash', () => {
    const h = hashOf(decideContact(contact(), undefined));
    const d = decideContact(contact({ city: 'Jeddah' }), { uuid: CONTACT, hash: h });
    expect(d.kind).toBe('update');
    if (d.kind !== 'update') return;
    expect(d.uuid).toBe(CONTACT);
    expect(d.body.city).toBe('Jeddah');
    expect(d.hash).not.toBe(h);
    // The hash is the content's, whichever request carries it: what a create of this record would store.
    expect(d.hash).toBe(hashOf(decideContact(contact({ city: 'Jeddah' }), undefined)));
    // A contact mapped by adoption (uuid, no hash yet) is updated once, so its content is ours.
    expect(decideContact(contact(), { uuid: CONTACT }).kind).toBe('update');
  });

  it('updates with null every optional field the record lacks, so what the platform removed is cleared', () => {
    const full = contact({ phoneNumber: '+966 50 111 1111', email: 'ap@acme.example', companyId: 'co-1', persons: [{ name: 'Jane', email: 'jane@acme.example' }] });
    const known: IdMapEntry = { uuid: CONTACT, hash: hashOf(decideContact(full, undefined)) };
    const d = decideContact(contact({ email: 'ap@acme.example' }), known);
    if (d.kind !== 'update') throw new Error(`expected an update, got ${d.kind}`);
    expect(d.body).toMatchObject({ uuid: CONTACT, name: 'Acme Trading', city: 'Riyadh', email: 'ap@acme.example', phoneNumber: null, extCompanyId: null, errorDetail: null, hasErrors: false, secondaryContacts: [] });
    expect(d.body).not.toHaveProperty('role');
    for (const field of CLEARABLE_CONTACT_FIELDS) expect(d.body, field).toHaveProperty(field);
    expect(contactUpdateSchema.safeParse(d.body).success).toBe(true);
    // Secondary contacts carry their own nulls; a phone changed is simply the new value.
    const changed = decideContact(contact({ phoneNumber: '+966 55 999 9999', persons: [{ name: 'Jane' }] }), known);
    expect(changed).toMatchObject({ kind: 'update', body: { phoneNumber: '+966 55 999 9999', email: null, secondaryContacts: [{ name: 'Jane', email: null, phoneNumber: null, firstName: null, lastName: null }] } });
    // A create has nothing to clear: no nulls.
    const created = decideContact(contact(), undefined);
    expect(Object.values(created.kind === 'create' ? created.body : {})).not.toContain(null);
  });

  it('hashes the create body: stored hashes of earlier versions still match, so an upgrade re-pushes nothing', () => {
    // Computed by the version before updates sent nulls (37ea293): a tenant's stored hashes look like this.
    const rec = contact({ phoneNumber: '+966 50 111 1111', persons: [{ name: 'Jane', email: 'jane@acme.example' }] });
    // Since lean state the hash is that one's first 18 hex (9 bytes), and the id map reads a stored 32-hex hash so.
    expect(decideContact(rec, undefined)).toMatchObject({ kind: 'create', hash: 'b5190fc73a4fe2056b0f28a7b2d88894'.slice(0, 18) });
    expect(decideContact(rec, { uuid: CONTACT, hash: decodeHash('b5190fc73a4fe2056b0f28a7b2d88894') }).kind).toBe('unchanged');
  });

  it('skips a contact its platform says is not a customer until it is in the service; then keeps it up to date', () => {
    expect(decideContact(contact({ customer: false }), undefined)).toEqual({ kind: 'skip', reason: 'not a customer' });
    // Not even a bad one is dead-lettered: a supplier's record is none of our business.
    expect(decideContact(contact({ customer: false, name: '  ' }), undefined)).toMatchObject({ kind: 'skip' });
    expect(decideContact(contact({ customer: true }), undefined).kind).toBe('create');
    const h = hashOf(decideContact(contact(), undefined));
    // Pushed before (a customer then, or needed by a receivable invoice): stays, and its changes go on flowing.
    expect(decideContact(contact({ customer: false }), { uuid: CONTACT, hash: h }).kind).toBe('unchanged');
    expect(decideContact(contact({ customer: false, city: 'Jeddah' }), { uuid: CONTACT, hash: h })).toMatchObject({ kind: 'update', body: { city: 'Jeddah', remindersEnabled: true } });
  });

  it('dead-letters a contact the mapper rejects, known or not', () => {
    for (const known of [undefined, { uuid: CONTACT, hash: 'x' }]) {
      expect(decideContact(contact({ name: '   ' }), known)).toEqual({ kind: 'dead-letter', reason: 'name: required', code: 'MAPPING_REJECTED' });
    }
  });
});

describe('decideInvoice', () => {
  it('creates an invoice the id map does not know, without uuid in its body', () => {
    const d = decideInvoice(invoice(), { contactUuid: CONTACT });
    expect(d.kind).toBe('create');
    if (d.kind !== 'create') return;
    expect(d.body).not.toHaveProperty('uuid');
    expect(d.body).toMatchObject({ contactUuid: CONTACT, extPlatformId: 'INV-1', outstandingAmount: 1000 });
  });

  it('hashes without the uuid, so the hash stored at create time makes the next run skip it', () => {
    const created = decideInvoice(invoice(), { contactUuid: CONTACT });
    const known: IdMapEntry = { uuid: INVOICE, hash: hashOf(created) };
    const again = decideInvoice(invoice({ updatedAt: '2026-03-01T00:00:00Z' }), { known, contactUuid: CONTACT });
    expect(again.kind).toBe('unchanged');
    expect(again).toMatchObject({ uuid: INVOICE, hash: hashOf(created), body: { uuid: INVOICE } });
    const mapped = mapInvoice(invoice(), { contactUuid: CONTACT, uuid: INVOICE });
    if (mapped.kind !== 'push') throw new Error('expected push');
    expect(again.kind === 'unchanged' && again.body).toEqual({ ...mapped.body, reference: null, notes: null, description: null, purchaseOrder: null });
    // Computed by the version before invoices sent nulls (37ea293): stored hashes still match.
    const withReference = decideInvoice(invoice({ reference: 'PO-7' }), { contactUuid: CONTACT });
    expect(withReference).toMatchObject({ kind: 'create', hash: decodeHash('c31ef1bc287d9184a334296d01d5e647') });
  });

  it('sends null for every text field the invoice lacks, on every push (the create-update may match an existing one)', () => {
    const known: IdMapEntry = { uuid: INVOICE, hash: hashOf(decideInvoice(invoice({ reference: 'R-1', notes: 'n' }), { contactUuid: CONTACT })) };
    const d = decideInvoice(invoice({ notes: 'n' }), { known, contactUuid: CONTACT });
    expect(d).toMatchObject({ kind: 'update', body: { uuid: INVOICE, reference: null, notes: 'n', description: null, purchaseOrder: null } });
    const created = decideInvoice(invoice(), { contactUuid: CONTACT });
    expect(created).toMatchObject({ kind: 'create', body: { reference: null, notes: null, description: null, purchaseOrder: null } });
    expect(invoiceUpsertSchema.safeParse(d.kind === 'update' && d.body).success).toBe(true);
  });

  it('updates a known invoice when its content or the payments known of it change', () => {
    const known: IdMapEntry = { uuid: INVOICE, hash: hashOf(decideInvoice(invoice(), { contactUuid: CONTACT })) };
    const due = decideInvoice(invoice({ dueDate: '2026-02-28' }), { known, contactUuid: CONTACT });
    expect(due).toMatchObject({ kind: 'update', uuid: INVOICE, body: { uuid: INVOICE, dueDate: '2026-02-28' } });
    const paid = decideInvoice(invoice(), { known, contactUuid: CONTACT, paymentsTotal: 400 });
    expect(paid).toMatchObject({ kind: 'update', uuid: INVOICE, body: { outstandingAmount: 600 } });
    // The contact's uuid is content: an invoice moved to another contact is updated.
    expect(decideInvoice(invoice(), { known, contactUuid: INVOICE }).kind).toBe('update');
  });

  it('leaves an invoice waiting for a contact that has no uuid yet', () => {
    expect(decideInvoice(invoice(), {})).toEqual({ kind: 'pending', waitingFor: 'C-1' });
    // One already in the service waits too when voided: its stop must reach the service.
    expect(decideInvoice(invoice({ status: 'VOIDED' }), { known: { uuid: INVOICE, hash: 'h' } })).toEqual({ kind: 'pending', waitingFor: 'C-1' });
  });

  it('skips drafts whatever the contact; a voided or deleted invoice never pushed waits for its contact like any other (decision 157)', () => {
    expect(decideInvoice(invoice({ status: 'DRAFT' }), {})).toEqual({ kind: 'skip', reason: 'draft' });
    expect(decideInvoice(invoice({ status: 'DRAFT' }), { contactUuid: CONTACT })).toEqual({ kind: 'skip', reason: 'draft' });
    expect(decideInvoice(invoice({ status: 'VOIDED' }), {})).toEqual({ kind: 'pending', waitingFor: 'C-1' });
    expect(decideInvoice(invoice({ deleted: true }), {})).toEqual({ kind: 'pending', waitingFor: 'C-1' });
    // With its contact known, a voided invoice is pushed (stopped), as the mapper says.
    expect(decideInvoice(invoice({ status: 'VOIDED' }), { contactUuid: CONTACT })).toMatchObject({ kind: 'create', body: { outstandingAmount: 0, remindersEnabled: false } });
  });

  it('dead-letters an invoice the mapper rejects', () => {
    expect(decideInvoice(invoice({ number: '  ' }), { contactUuid: CONTACT })).toEqual({ kind: 'dead-letter', reason: 'number: required', code: 'MAPPING_REJECTED' });
  });
});

describe('decidePayment', () => {
  it('updates a payment whose service id is known, from the record or the id map', () => {
    const fromRecord = decidePayment(payment({ paymentUuid: PAYMENT, reference: ' TRX ' }), undefined);
    expect(fromRecord).toMatchObject({ kind: 'update', uuid: PAYMENT, body: { amount: 250, date: '2026-02-01', reference: 'TRX' } });
    expect(decidePayment(payment(), { uuid: PAYMENT })).toMatchObject({ kind: 'update', uuid: PAYMENT });
  });

  it('lists a changed payment with no service id as unlinked, keeping its hash', () => {
    const d = decidePayment(payment(), undefined);
    expect(d.kind).toBe('unlinked');
    expect(hashOf(d)).toMatch(/^[0-9a-f]{18}$/);
  });

  it('skips an unchanged payment, linked or not', () => {
    const h = hashOf(decidePayment(payment(), undefined));
    expect(decidePayment(payment({ updatedAt: '2026-05-01T00:00:00Z' }), { hash: h })).toEqual({ kind: 'unchanged', hash: h });
    expect(decidePayment(payment({ paymentUuid: PAYMENT }), { uuid: PAYMENT, hash: h })).toEqual({ kind: 'unchanged', hash: h });
  });

  it('sends nothing for a deleted payment, but a new hash (its invoice balance changes)', () => {
    const h = hashOf(decidePayment(payment(), undefined));
    const deleted = decidePayment(payment({ deleted: true }), { uuid: PAYMENT, hash: h });
    expect(deleted.kind).toBe('skip');
    expect(hashOf(deleted)).not.toBe(h);
    expect(decidePayment(payment({ deleted: true }), { hash: h }).kind).toBe('unlinked');
  });

  it('hashes the invoice a payment belongs to: moving it is a change', () => {
    const h = hashOf(decidePayment(payment(), undefined));
    expect(decidePayment(payment({ invoiceId: 'INV-2' }), { uuid: PAYMENT, hash: h })).toMatchObject({ kind: 'update' });
  });
});
