/** A request body the mapper checked is not checked again by the client, and can no longer change. */
import { describe, expect, it } from 'vitest';
import { markChecked, wasChecked } from '../../src/collections/checked.js';
import { contactCreateSchema, contactUpdateSchema, invoiceUpsertSchema } from '../../src/collections/schemas.js';
import { decideContact, decideInvoice } from '../../src/mapping/index.js';
import type { ContactRecord, InvoiceRecord } from '../../src/platforms/records.js';

const UUID = '3f1c2a4e-8b7d-4c1e-9a2b-5d6e7f8a9b0c';
const contact: ContactRecord = { id: 'C-1', name: 'Acme', deleted: false, updatedAt: '2026-01-01T00:00:00.000Z', persons: [{ name: 'Jo' }] };
const invoice: InvoiceRecord = {
  id: 'I-1', contactId: 'C-1', number: 'INV-1', date: '2026-01-01', dueDate: '2026-02-01', total: 10, status: 'AUTHORISED',
  deleted: false, updatedAt: '2026-01-01T00:00:00.000Z', currencyCode: 'SAR',
};

describe('request bodies checked once', () => {
  it('a checked body is known to its schema only, and frozen to the bottom', () => {
    const body = markChecked(contactCreateSchema, contactCreateSchema.parse({ name: 'x', secondaryContacts: [{ name: 'y' }] }));
    expect(wasChecked(contactCreateSchema, body)).toBe(true);
    expect(wasChecked(contactUpdateSchema, body)).toBe(false);
    expect(wasChecked(contactCreateSchema, { ...body })).toBe(false);
    expect(() => ((body as { name: string }).name = 'changed')).toThrow(TypeError);
    expect(() => body.secondaryContacts!.push({ name: 'z' })).toThrow(TypeError);
    expect(() => ((body.secondaryContacts![0] as { name: string }).name = 'changed')).toThrow(TypeError);
  });

  it('the bodies the decisions send are the checked ones (a create, an invoice with its nulls)', () => {
    const c = decideContact(contact, undefined);
    expect(c.kind).toBe('create');
    if (c.kind === 'create') expect(wasChecked(contactCreateSchema, c.body)).toBe(true);
    const i = decideInvoice(invoice, { contactUuid: UUID });
    expect(i.kind).toBe('create');
    if (i.kind === 'create') {
      expect(i.body.reference).toBeNull();
      expect(wasChecked(invoiceUpsertSchema, i.body)).toBe(true);
      expect(Object.isFrozen(i.body)).toBe(true);
    }
  });
});
