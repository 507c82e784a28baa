/**
 * The quick check of service answers and request bodies (fast-check.ts) never passes what the zod schema refuses
 * nor what zod would give back changed (a stripping object's unknown key), passes the common answers and bodies (so
 * the hot path skips zod's parse), and leaves schemas it does not cover to zod.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { z } from 'zod';
import { fastCheckOf } from '../src/zod-fast-check.js';
import { quickChecked, wasChecked } from '../src/collections/checked.js';
import {
  contactCreateSchema,
  contactPageSchema,
  contactSchema,
  contactUpdateSchema,
  invoiceSchema,
  invoiceUpsertSchema,
  paymentSchema,
  paymentUpdateSchema,
} from '../src/collections/schemas.js';
import { contactRecordSchema, invoiceRecordSchema, paymentRecordSchema } from '../src/platforms/records.js';

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
// Platform records as an adapter reads them (stripping objects; `deleted` has a default, an invoice a refinement).
const contactRecord = {
  id: 'C-1', updatedAt: '2026-11-25T07:25:50.169Z', deleted: false, name: 'Acme', nameAr: 'أكمي', email: 'a@b.c', phoneNumber: '+971501234567',
  persons: [{ id: 'P-1', name: 'Ann Lee', email: 'ann@example.com' }], customer: true,
};
const invoiceRecord = {
  id: 'I-1', contactId: 'C-1', updatedAt: '2026-11-25T10:25:50+03:00', status: 'AUTHORISED', deleted: false, number: 'INV-1',
  date: '2026-01-01', dueDate: '2026-02-01', total: 100, outstandingAmount: 40, currencyCode: 'SAR', reference: 'PO-1',
};
const paymentRecord = { id: 'PAY-1', invoiceId: 'I-1', updatedAt: '2026-11-25T07:25:50Z', amount: 5, date: '2026-01-03', paymentUuid: UUID, deleted: true };

/** Wrong values of every kind the schemas tell apart. */
const WRONG: unknown[] = [
  undefined, null, 0, 1.5, -1, Number.MAX_SAFE_INTEGER + 2, Infinity, '', 'x', 'not-a-uuid', '2026-02-30', '2026-1-5', 'a@', 'x'.repeat(256),
  '2026-11-25T25:00:00Z', '2026-11-25T07:25:50', '2026-11-25 07:25:50Z', '2026-11-25T07:25:50.1+0300',
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

/** Every schema the quick check serves, with a value of it. */
const CASES = [
  ['contact', contactSchema, contact],
  ['invoice', invoiceSchema, invoice],
  ['payment', paymentSchema, payment],
  ['contact page', contactPageSchema, page],
  ['invoice create-update body', invoiceUpsertSchema, invoiceBody],
  ['contact create body', contactCreateSchema, contactBody],
  ['contact update body', contactUpdateSchema, contactUpdate],
  ['payment update body', paymentUpdateSchema, paymentBody],
  ['platform contact record', contactRecordSchema, contactRecord],
  ['platform invoice record', invoiceRecordSchema, invoiceRecord],
  ['platform payment record', paymentRecordSchema, paymentRecord],
] as const;

describe('fast check of service answers', () => {
  for (const [name, schema, sample] of CASES) {
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

  it('leaves schemas with transforms, checks it does not know or formats beyond a pattern to zod', () => {
    expect(fastCheckOf(z.looseObject({ a: z.string().transform((s) => s.length) }))).toBeUndefined();
    expect(fastCheckOf(z.looseObject({ a: z.string().refine((s) => s !== 'x') }))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.number() }).refine((v) => v.a > 1, { when: () => true }))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.number() }).superRefine(() => undefined))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.url() }))).toBeUndefined();
    expect(fastCheckOf(z.record(z.string().min(2), z.unknown()))).toBeUndefined();
    expect(fastCheckOf(z.object({ a: z.string() }).catchall(z.string()))).toBeUndefined();
  });

  it("a default passes only a value given (none: zod's output has the default); an object's refinements are called", () => {
    const defaulted = fastCheckOf(z.object({ a: z.number().default(1) }))!;
    expect(defaulted({ a: 2 })).toBe(true);
    expect(defaulted({})).toBe(false);
    expect(defaulted({ a: 'x' })).toBe(false);
    let calls = 0;
    const refined = fastCheckOf(
      z.object({ a: z.number(), b: z.number() }).refine((v) => (calls += 1) > 0 && v.a <= v.b),
    )!;
    expect(refined({ a: 1, b: 2 })).toBe(true);
    expect(refined({ a: 3, b: 2 })).toBe(false);
    expect(refined({ a: 'x', b: 2 })).toBe(false);
    expect(calls).toBe(2);
    // Truthy but not true, or a throw: left to zod (which decides, and names what is wrong).
    expect(fastCheckOf(z.object({ a: z.number() }).refine(() => 1 as unknown as boolean))!({ a: 1 })).toBe(false);
    expect(fastCheckOf(z.object({ a: z.number() }).refine(() => { throw new Error('x'); }))!({ a: 1 })).toBe(false);
    const dated = fastCheckOf(z.object({ at: z.iso.datetime({ offset: true }) }))!;
    expect(dated({ at: '2026-11-25T07:25:50.123+03:00' })).toBe(true);
    expect(dated({ at: '2026-11-25T07:25:50' })).toBe(false);
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

/**
 * The same promise as a property over generated values (fast-check): whatever a sample becomes after one to three
 * random edits (a field at any depth replaced by a generated value of any kind, removed, or a key added), a value the
 * quick check passes is one zod's own safeParse accepts and gives back equal. Pinned zod (package.json) keeps the
 * internals the check reads from moving under it; this is what proves it still agrees after an upgrade.
 */
describe('fast check against zod safeParse, generated values', () => {
  type Path = (string | number)[];
  const pathsOf = (v: unknown, at: Path = []): Path[] => {
    if (typeof v !== 'object' || v === null) return [at];
    const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
    return [at, ...entries.flatMap(([k, x]) => pathsOf(x, [...at, k]))];
  };
  const REMOVE = Symbol('remove');
  const setAt = (v: unknown, path: Path, value: unknown): unknown => {
    if (path.length === 0) return value === REMOVE ? undefined : value;
    const [head, ...rest] = path as [string | number, ...Path];
    // An earlier edit replaced a parent of this path: nothing left to edit there.
    if (typeof v !== 'object' || v === null) return v;
    if (Array.isArray(v)) return (v as unknown[]).map((x, i) => (i === head ? setAt(x, rest, value) : x));
    const obj = v as Record<string, unknown>;
    if (rest.length === 0 && value === REMOVE) {
      const { [head]: _gone, ...others } = obj;
      return others;
    }
    return { ...obj, [head]: setAt(obj[head], rest, value) };
  };
  const isoDate = fc.date({ min: new Date('1990-01-01'), max: new Date('2100-01-01'), noInvalidDate: true });
  /** Values of every kind, weighted toward the ones these schemas tell apart by content (dates, ids, emails). */
  const anyValue: fc.Arbitrary<unknown> = fc.oneof(
    fc.anything({ maxDepth: 2, withNullPrototype: true, withObjectString: true, withBoxedValues: true, withMap: true, withSparseArray: true }),
    fc.string(),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(REMOVE),
    fc.uuid(),
    fc.emailAddress(),
    isoDate.map((d) => d.toISOString().slice(0, 10)),
    isoDate.map((d) => d.toISOString()),
    isoDate.map((d) => d.toISOString().replace('Z', '+03:00')),
    fc.constantFrom(...WRONG),
  );

  for (const [name, schema, sample] of CASES) {
    it(`${name}: a value the check passes is one zod accepts and gives back equal`, () => {
      const check = fastCheckOf(schema)!;
      const paths = pathsOf(sample).filter((p) => p.length > 0);
      const edit = fc.tuple(fc.constantFrom(...paths), anyValue);
      const keyAdded = fc.tuple(fc.constantFrom(...pathsOf(sample).filter((p) => p.length < 3)), fc.string({ minLength: 1, maxLength: 8 }), anyValue);
      let passed = 0;
      let refused = 0;
      fc.assert(
        fc.property(fc.array(edit, { minLength: 1, maxLength: 3 }), fc.option(keyAdded, { freq: 4 }), (edits, added) => {
          let v: unknown = sample;
          for (const [path, value] of edits) v = setAt(v, path, value);
          if (added) {
            const [path, key, value] = added;
            const target = path.reduce<unknown>((o, k) => (o as Record<string | number, unknown> | undefined)?.[k], v);
            if (typeof target === 'object' && target !== null && !Array.isArray(target)) v = setAt(v, [...path, key], value);
          }
          const zod = schema.safeParse(v);
          if (check(v)) {
            passed += 1;
            expect(zod.success).toBe(true);
            expect(zod.data).toEqual(v);
          } else if (!zod.success) refused += 1;
        }),
        { numRuns: 3000, seed: Number(process.env.FAST_CHECK_SEED ?? 20261127) },
      );
      // Both sides of the property were exercised.
      expect(passed).toBeGreaterThan(50);
      expect(refused).toBeGreaterThan(500);
    });
  }
});
