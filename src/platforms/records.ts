/**
 * Canonical platform records (record-format.md): what every adapter yields and the `file` adapter reads.
 * A record that breaks these rules is a bad record: reported with its place and reason, never pushed.
 */
import { z } from 'zod';
import { fastCheckOf } from '../zod-fast-check.js';
import { isMissing, reportedIssues } from '../zod-issues.js';

const s255 = z.string().min(1).max(255);
const timestamp = z.iso.datetime({ offset: true });
const date = z.iso.date();

export const personSchema = z.object({
  id: z.string().min(1).max(255).optional(),
  name: z.string().optional(),
  firstName: z.string().optional(),
  lastName: z.string().optional(),
  email: z.string().optional(),
  phoneNumber: z.string().optional(),
});

/**
 * Optional contact fields are kept as plain strings here: the mapper checks their 1-255 / email rules and
 * drops a bad one with `hasErrors` (a bad optional field never stops the record). `customer: false` says the
 * platform does not count the contact as a customer (a supplier only, say): it is pushed only once a
 * receivable invoice needs it, or if it is in the service already. Absent means a customer.
 */
export const contactRecordSchema = z.object({
  id: s255,
  companyId: z.string().optional(),
  updatedAt: timestamp,
  deleted: z.boolean().default(false),
  name: s255,
  nameAr: z.string().optional(),
  firstName: z.string().optional(),
  firstNameAr: z.string().optional(),
  lastName: z.string().optional(),
  lastNameAr: z.string().optional(),
  email: z.string().optional(),
  phoneNumber: z.string().optional(),
  vatNumber: z.string().optional(),
  building: z.string().optional(),
  buildingAr: z.string().optional(),
  street: z.string().optional(),
  streetAr: z.string().optional(),
  district: z.string().optional(),
  districtAr: z.string().optional(),
  city: z.string().optional(),
  cityAr: z.string().optional(),
  country: z.string().optional(),
  countryAr: z.string().optional(),
  postalCode: z.string().optional(),
  additionalNumber: z.string().optional(),
  otherId: z.string().optional(),
  bankName: z.string().optional(),
  bankContactName: z.string().optional(),
  iban: z.string().optional(),
  accountNumber: z.string().optional(),
  persons: z.array(personSchema).optional(),
  customer: z.boolean().optional(),
});

export const invoiceRecordSchema = z
  .object({
    id: s255,
    contactId: s255,
    updatedAt: timestamp,
    status: z.enum(['DRAFT', 'AUTHORISED', 'PAID', 'VOIDED']),
    deleted: z.boolean().default(false),
    number: s255,
    date,
    dueDate: date,
    total: z.number().min(0),
    outstandingAmount: z.number().min(0).optional(),
    currencyCode: z.string().regex(/^[A-Z]{3}$/, 'three upper-case letters').optional(),
    reference: z.string().optional(),
    notes: z.string().optional(),
    description: z.string().optional(),
    purchaseOrder: z.string().optional(),
  })
  .refine((r) => r.outstandingAmount === undefined || r.outstandingAmount <= r.total, {
    message: 'outstandingAmount must be between 0 and total',
    path: ['outstandingAmount'],
  });

export const paymentRecordSchema = z.object({
  id: s255,
  invoiceId: s255,
  updatedAt: timestamp,
  amount: z.number().gt(0),
  date,
  reference: z.string().optional(),
  notes: z.string().optional(),
  paymentUuid: z.guid().optional(),
  deleted: z.boolean().default(false),
});

export type ContactRecord = z.infer<typeof contactRecordSchema>;
export type InvoiceRecord = z.infer<typeof invoiceRecordSchema>;
export type PaymentRecord = z.infer<typeof paymentRecordSchema>;
export type Person = z.infer<typeof personSchema>;

export const recordSchemas = {
  contacts: contactRecordSchema,
  invoices: invoiceRecordSchema,
  payments: paymentRecordSchema,
} as const;

export interface RecordOf {
  contacts: ContactRecord;
  invoices: InvoiceRecord;
  payments: PaymentRecord;
}

// ---------- checking raw records (every adapter) ----------

/** The outcome of checking one raw record against its entity's schema. */
export type RecordCheck<E extends keyof RecordOf> =
  | { ok: true; record: RecordOf[E] }
  | { ok: false; reason: string; platformId?: string };

/** `persons[2].email` from a zod path; `(record)` for the record itself. */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || '(record)';
}

/**
 * Every issue as `field: message`, joined by `; `. A missing field says `required`; a wrong one says what was
 * expected and what came (`expected number, received string`). Never quotes the value. The issues must come
 * from `reportedIssues`.
 */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => `${issuePath(issue.path)}: ${isMissing(issue) ? 'required' : issue.message}`)
    .join('; ');
}

/** The record's own `id` when it is a string, for reporting a bad record. */
export function rawId(raw: unknown): string | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const id = (raw as Record<string, unknown>)['id'];
  return typeof id === 'string' && id.length > 0 ? id : undefined;
}

const rawCursorSchema = z.object({ id: z.string().min(1), updatedAt: timestamp });

/** The (updatedAt, id) position of a raw record when both are well formed, even if the rest of it is bad. */
export function rawCursor(raw: unknown): { updatedAt: string; id: string } | undefined {
  const parsed = rawCursorSchema.safeParse(raw);
  return parsed.success ? { updatedAt: parsed.data.updatedAt, id: parsed.data.id } : undefined;
}

/**
 * Validates one raw record of `entity`: the record with defaults applied, or the reason it is bad. A record the
 * schema's quick check passes (src/zod-fast-check.ts: zod would give back an equal one) is used as it is.
 */
export function checkRecord<E extends keyof RecordOf>(entity: E, raw: unknown): RecordCheck<E> {
  if (fastCheckOf(recordSchemas[entity])?.(raw) === true) return { ok: true, record: raw as RecordOf[E] };
  const parsed = recordSchemas[entity].safeParse(raw);
  if (parsed.success) return { ok: true, record: parsed.data as RecordOf[E] };
  const platformId = rawId(raw);
  const reason = describeIssues(reportedIssues(recordSchemas[entity], raw));
  return platformId === undefined ? { ok: false, reason } : { ok: false, reason, platformId };
}
