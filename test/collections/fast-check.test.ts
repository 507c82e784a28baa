/**
 * The quick check of service answers (fast-check.ts) never passes what the zod schema refuses, passes the
 * common answers (so the hot path skips zod's parse), and leaves schemas it does not cover to zod.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fastCheckOf } from '../../src/collections/fast-check.js';
import { contactPageSchema, contactSchema, invoiceSchema, paymentSchema } from '../../src/collections/schemas.js';

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

/** Wrong values of every kind the schemas tell apart. */
const WRONG: unknown[] = [undefined, null, 0, 1.5, -1, Number.MAX_SAFE_INTEGER + 2, '', 'x', 'not-a-uuid', true, {}, [], [1], { uuid: 1 }];

/** Every value of `sample` with one field (at any depth) replaced by each wrong value, and the field removed. */
function* mutations(sample: unknown): Generator<unknown> {
  if (typeof sample !== 'object' || sample === null) return;
  const list: unknown[] | undefined = Array.isArray(sample) ? sample : undefined;
  const entries: [string | number, unknown][] = list ? list.map((v, i) => [i, v]) : Object.entries(sample);
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

  it('leaves schemas with transforms, defaults or stripping objects to zod', () => {
    expect(fastCheckOf(z.object({ a: z.string() }))).toBeUndefined();
    expect(fastCheckOf(z.looseObject({ a: z.string().transform((s) => s.length) }))).toBeUndefined();
    expect(fastCheckOf(z.looseObject({ a: z.number().default(1) }))).toBeUndefined();
    expect(fastCheckOf(z.looseObject({ a: z.string().refine((s) => s !== 'x') }))).toBeUndefined();
    expect(fastCheckOf(z.looseObject({ a: z.email() }))).toBeUndefined();
  });
});
