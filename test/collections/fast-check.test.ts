/**
 * The quick check of service answers and request bodies (fast-check.ts) never passes what the zod schema refuses
 * nor what zod would give back changed (a stripping object's unknown key), passes the common answers and bodies (so
 * the hot path skips zod's parse), and leaves schemas it does not cover to zod.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fastCheckOf } from '../../src/collections/fast-check.js';
import { quickChecked, wasChecked } from '../../src/collections/checked.js';
import {
  contactCreateSchema,
  contactPageSchema,
  contactSchema,
  contactUpdateSchema,
  invoiceSchema,
  invoiceUpsertSchema,
  paymentSchema,
  paymentUpdateSchema,
} from '../../src/collections/schemas.js';

const UUID = '3f1c2a4e-8b7d-4c1e-9a2b-5d6e7f8a9b0c';
const short = { uuid: UUID, name: 'Acme', firstName: null, lastName: 'Doe', phoneNumber: null, email: 'a@b.c' };
const contact = {
  uuid: UUID, name: 'Acme', nameAr: null, email: 'a@b.c', emailTone: 'FRIENDLY', sendEmailNotif: true, sendSmsNotif: false,
  remindersEnabled: true, extPlatformId: 'C-1', extCompanyId: null, hasErrors: false, errorDetail: { any: ['thing'] },
  secondaryContacts: [short], customFields: [], totalAmount: 10.5, totalPaid: 0, outstandingAmount: 10.5, totalInvoices: 2,
  countUnpaidInvoices: 1, risk: 'LOW', role: 'PRIMARY', paymentInstructions: { bank: 'x' }, workflow: null, unknownKey: { kept: 1 },
};
const invoice = {
  number: 'INV-1', date: '2026-01-01', dueDate: '2026-02-01', total: 100, uuid: UUID, status: 'UNPAID', contact: short,
  createdAt: '2026-01-01T00:00:00Z', reference: null, notes: 'n', extPlatformId: 'I-1', totalPaid: 0, outstandingAmount: 100,
  remindersEnabled: true, preDueEmails: 0, postDueEmails: 3, attachment: false, customFields: null, extra: 'kept',
};
const payment = { amount: 5, date: '2026-01-03', uuid: UUID, reference: 'r', notes: null, onlinePaymentId: 7, paymentType: 'PAYMENT' };
const page = { items: [contact, { ...contact, uuid: UUID.replace('3f', '4f') }], total: 2, page: 1, size: 100, pages: 1 };
// Request bodies as the mapper builds them (stripping objects: an unknown key is dropped by zod, so never passed).
const invoiceBody = {
  number: 'INV-1', date: '2026-01-01', dueDate: '2026-02-29'.replace('29', '28'), total: 100, contactUuid: UUID, outstandingAmount: 40,
  extPlatformId: 'I-1', remindersEnabled: true, reference: null, notes: 'n', description: null, purchaseOrder: 'PO-1',
};
const person = { firstName: 'Ann', lastName: 'Lee', email: 'ann@example.com', phoneNumber: '+971501234567' };
const contactBody = {
  name: 'Acme', nameAr: 'أكمي', phoneNumber: '+971501234567', email: 'billing@acme.example', extPlatformId: 'C-1', extCompanyId: 'CO-1',
  remindersEnabled: true, hasErrors: true, errorDetail: { source: 'collections-sync', dropped: { email: 'not an email' } },
  secondaryContacts: [person], role: 'PRIMARY',
};
const { role: _role, ...contactUpdateBase } = contactBody;
const contactUpdate = { ...contactUpdateBase, nameAr: null, vatNumber: null, uuid: UUID, secondaryContacts: [{ ...person, email: null }] };
const paymentBody = { amount: 5, date: '2026-01-03', reference: 'r' };

/** Wrong values of every kind the schemas tell apart. */
const WRONG: unknown[] = [
  undefined, null, 0, 1.5, -1, Number.MAX_SAFE_INTEGER + 2, Infinity, '', 'x', 'not-a-uuid', '2026-02-30', '2026-1-5', 'a@', 'x'.repeat(256),
  true, {}, [], [1], { uuid: 1 }, { [Symbol('s')]: 1 }, JSON.parse('{"__proto__": 1}') as unknown, new Map(), { a: undefined },
];

/** Every value of `sample` with one field (at any depth) replaced by each wrong value, and the field removed. */
function* mutations(sample: unknown): Generator<unknown> {
  if (typeof sample !== 'object' || sample === null) return;
  const list: unknown[] | undefined = Array.isArray(sample) ? sample : undefined;
  const entries: [string | number, unknown][] = list ? list.map((v, i) => [i, v]) : Object.entries(sample);
  // A key the schema does not know: a loose object keeps it, a stripping one drops it (so the check must refuse).
  if (!list) yield { ...sample, unknownKey2: 'x' };
  for (const [k, v] of entries) {
    const copy = (value: unknown): unknown => (list ? list.map((x, i) => (i === k ? value : x)) : { ...sample, [k]: value });
    for (const w of WRONG) yield copy(w);
    if (!list) {
      const { [k]: _gone, ...rest } = sample as Record<string, unknown>;
      yield rest;
    }
    for (const inner of mutations(v)) yield copy(inner);
  }
}

describe('fast check of service answers', () => {
  const cases = [
    ['contact', contactSchema, contact],
    ['invoice', invoiceSchema, invoice],
    ['payment', paymentSchema, payment],
    ['contact page', contactPageSchema, page],
    ['invoice create-update body', invoiceUpsertSchema, invoiceBody],
    ['contact create body', contactCreateSchema, contactBody],
    ['contact update body', contactUpdateSchema, contactUpdate],
    ['payment update body', paymentUpdateSchema, paymentBody],
  ] as const;

  for (const [name, schema, sample] of cases) {
    it(`${name}: passes a good answer, and never one zod refuses`, () => {
      const check = fastCheckOf(schema);
      expect(check).toBeDefined();
      expect(schema.safeParse(sample).success).toBe(true);
      expect(check!(sample)).toBe(true);
      let refused = 0;
      let passed = 0;
      for (const m of mutations(sample)) {
        const zod = schema.safeParse(m);
        if (check!(m)) {
          passed += 1;
          expect(zod.success, JSON.stringify(m)).toBe(true);
          // The value is used as it is: zod would give back an equal one.
          expect(zod.data).toEqual(m);
        } else if (!zod.success) refused += 1;
      }
      expect(refused).toBeGreaterThan(20);
      expect(passed).toBeGreaterThan(5);
    });
  }

  it('leaves schemas with transforms, defaults, refinements or formats beyond a pattern to zod', () => {
    expect(fastCheckOf(z.looseObject({ a: z.string().transform((s) => s.length) }))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.number().default(1) }))).toBeUndefined();
    expect(fastCheckOf(z.looseObject({ a: z.string().refine((s) => s !== 'x') }))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.url() }))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.iso.datetime() }))).toBeUndefined();
    expect(fastCheckOf(z.record(z.string().min(2), z.unknown()))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.string() }).catchall(z.string()))).toBeUndefined();
  });

  it('a stripping object passes only a value without unknown keys; a strict one likewise', () => {
    for (const schema of [z.object({ a: z.string() }), z.strictObject({ a: z.string() })]) {
      const check = fastCheckOf(schema)!;
      expect(check({ a: 'x' })).toBe(true);
      expect(check({ a: 'x', b: 1 })).toBe(false);
      expect(check(Object.assign(Object.create({ inherited: 1 }) as object, { a: 'x' }))).toBe(false);
    }
  });

  it('quickChecked: the body itself, frozen and marked checked for that schema; undefined when the check does not pass', () => {
    const body = structuredClone(invoiceBody);
    const out = quickChecked(invoiceUpsertSchema, body);
    expect(out).toBe(body);
    expect(Object.isFrozen(body)).toBe(true);
    expect(wasChecked(invoiceUpsertSchema, body)).toBe(true);
    expect(wasChecked(contactCreateSchema, body)).toBe(false);
    const extra = { ...structuredClone(invoiceBody), currencyCode: 'AED' };
    expect(quickChecked(invoiceUpsertSchema, extra)).toBeUndefined();
    expect(Object.isFrozen(extra)).toBe(false);
    expect(quickChecked(invoiceUpsertSchema, { ...structuredClone(invoiceBody), dueDate: '2026-02-30' })).toBeUndefined();
  });
});
