/**
 * The collections service's contract (collections-api.md, version 0.169.9) as zod schemas.
 * Requests are strict to the service's limits (so a request it would answer with 422 is refused locally);
 * responses are lenient where the description is loose (unknown fields kept, nulls accepted) and strict
 * where it says "required". Types are inferred from these schemas; there are no hand-written duplicates.
 * The simulator validates with the same schemas, so local refusals and the simulator's 422s agree.
 */
import { z } from 'zod';
import { isMissing } from '../zod-issues.js';

// ---------- building blocks ----------
/** The longest string of a contact or invoice field. */
export const STRING_MAX = 255;
/** Strings of contact and invoice fields: 1-255 characters (collections-api.md, Limits). */
export const str255 = z.string().min(1).max(STRING_MAX);
/** Any 8-4-4-4-12 hex identifier (the service's UUID check accepts every version). */
export const uuid = z.guid();
/** `YYYY-MM-DD`, a real calendar date. */
export const isoDate = z.iso.date();
export const emailTone = z.enum(['FRIENDLY', 'NEUTRAL', 'REALESTATE']);
export const emailLang = z.enum(['ENGLISH', 'ARABIC', 'ENGLISH_ARABIC']);
export const smsLang = z.enum(['ENGLISH', 'ARABIC']);
export const risk = z.enum(['LOW', 'MEDIUM', 'HIGH']);
export const role = z.enum(['PRIMARY', 'SECONDARY']);
export const invoiceStatus = z.enum(['UNPAID', 'PAID']);
export const invoiceLevel = z.enum(['UPCOMING', 'DUE', 'OVER-DUE', 'PAID']);
export const paymentType = z.enum(['PAYMENT', 'CREDIT_MEMO', 'OTHER_PAYMENT', 'JOURNAL_ENTRY']);
/** `errorDetail`: its content is not shown in the description; we send an object of strings (docs/decisions). */
export const errorDetail = z.record(z.string(), z.unknown());
/** `customFields`: element shape not shown; passed through as given. */
export const customFields = z.array(z.unknown());

/**
 * A number in a query string, coerced. A value that is not a number came as text (a query has nothing else),
 * which is what the message says, not zod's "received NaN" of the coerced value.
 */
const queryNumber = () =>
  z.coerce.number({ error: (iss) => (iss.code === 'invalid_type' ? 'Invalid input: expected number, received string' : undefined) });

// ---------- contacts (requests) ----------
/** The string fields shared by contacts and secondary contacts, all 1-255. */
export const CONTACT_STRING_FIELDS = [
  'name', 'nameAr', 'firstName', 'firstNameAr', 'lastName', 'lastNameAr',
  'phoneNumber', 'vatNumber',
  'building', 'buildingAr', 'street', 'streetAr', 'district', 'districtAr', 'city', 'cityAr',
  'country', 'countryAr', 'postalCode', 'additionalNumber', 'otherId',
  'bankName', 'bankContactName', 'iban', 'accountNumber',
] as const;
export type ContactStringField = (typeof CONTACT_STRING_FIELDS)[number];

const contactStrings = Object.fromEntries(CONTACT_STRING_FIELDS.map((f) => [f, str255.optional()])) as {
  [K in ContactStringField]: z.ZodOptional<typeof str255>;
};

const contactCommon = {
  ...contactStrings,
  email: z.email().optional(),
  emailTone: emailTone.optional(),
  sendEmailNotif: z.boolean().optional(),
  sendEmailNotifLang: emailLang.optional(),
  sendSmsNotif: z.boolean().optional(),
  sendSmsNotifLang: smsLang.optional(),
  remindersEnabled: z.boolean().optional(),
  extPlatformId: z.string().optional(),
  extCompanyId: z.string().optional(),
  hasErrors: z.boolean().optional(),
  errorDetail: errorDetail.optional(),
};

export const secondaryContactSchema = z.object({ ...contactCommon, uuid: uuid.optional() });

const contactBody = {
  ...contactCommon,
  secondaryContacts: z.array(secondaryContactSchema).optional(),
  paymentInstructions: uuid.optional(),
  workflowUuid: uuid.optional(),
  customFields: customFields.optional(),
  gender: z.enum(['male', 'female']).optional(),
};

/**
 * The fields an update may clear by sending `null` (the service answers unset fields as null; docs/decisions):
 * the optional strings, `email`, `extCompanyId` and `errorDetail`. Not `name` (required on create), and not on a
 * create, which has nothing to clear.
 */
export const CLEARABLE_CONTACT_FIELDS = [
  ...CONTACT_STRING_FIELDS.filter((f): f is Exclude<ContactStringField, 'name'> => f !== 'name'),
  'email', 'extCompanyId', 'errorDetail',
] as const;
type ClearableContactField = (typeof CLEARABLE_CONTACT_FIELDS)[number];

const clearable = Object.fromEntries(
  CLEARABLE_CONTACT_FIELDS.map((f) => [f, (contactCommon[f] as z.ZodOptional<z.ZodType>).unwrap().nullable().optional()]),
) as { [K in ClearableContactField]: z.ZodOptional<z.ZodNullable<ReturnType<(typeof contactCommon)[K]['unwrap']>>> };

export const secondaryContactUpdateSchema = z.object({ ...contactCommon, ...clearable, uuid: uuid.optional() });

export const contactCreateSchema = z.object({ ...contactBody, name: str255, role: role.optional() });
export const contactUpdateSchema = z.object({
  ...contactBody,
  ...clearable,
  secondaryContacts: z.array(secondaryContactUpdateSchema).optional(),
  uuid,
});

// ---------- contacts (responses) ----------
const nullable = <T extends z.ZodType>(t: T) => t.nullable().optional();
export const shortContactSchema = z.looseObject({
  uuid,
  name: nullable(z.string()),
  firstName: nullable(z.string()),
  lastName: nullable(z.string()),
  phoneNumber: nullable(z.string()),
  email: nullable(z.string()),
});

const contactResponseStrings = Object.fromEntries(CONTACT_STRING_FIELDS.map((f) => [f, nullable(z.string())])) as {
  [K in ContactStringField]: ReturnType<typeof nullable<z.ZodString>>;
};

export const contactSchema = z.looseObject({
  ...contactResponseStrings,
  uuid,
  email: nullable(z.string()),
  emailTone: nullable(z.string()),
  sendEmailNotif: nullable(z.boolean()),
  sendEmailNotifLang: nullable(z.string()),
  sendSmsNotif: nullable(z.boolean()),
  sendSmsNotifLang: nullable(z.string()),
  remindersEnabled: nullable(z.boolean()),
  extPlatformId: nullable(z.string()),
  extCompanyId: nullable(z.string()),
  hasErrors: nullable(z.boolean()),
  errorDetail: nullable(z.unknown()),
  secondaryContacts: nullable(z.array(shortContactSchema)),
  customFields: nullable(z.array(z.unknown())),
  totalAmount: nullable(z.number()),
  totalPaid: nullable(z.number()),
  outstandingAmount: nullable(z.number()),
  totalInvoices: nullable(z.number().int()),
  countUnpaidInvoices: nullable(z.number().int()),
  risk: nullable(z.string()),
  role: nullable(z.string()),
  paymentInstructions: nullable(z.looseObject({})),
  workflow: nullable(z.looseObject({})),
  promiseToPayDate: nullable(z.string()),
  promiseToPaySwitchWorkflowUuid: nullable(z.string()),
  reminderStatus: nullable(z.string()),
  reminderLabel: nullable(z.string()),
});

/** GET /contact query, camelCase here; `CONTACT_LIST_PARAMS` gives each one's kebab-case wire name. */
export const contactListQuerySchema = z.object({
  page: queryNumber().int().min(1).optional(),
  size: queryNumber().int().min(1).max(100).optional(),
  name: z.string().max(255).optional(),
  uuid: uuid.optional(),
  accountNumber: z.string().max(255).optional(),
  riskLevel: z.string().optional(),
  workflowUuid: uuid.optional(),
  remindersEnabled: z.union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')]).optional(),
  reminderStatus: z.string().optional(),
  totalAmountFrom: queryNumber().optional(),
  totalAmountTo: queryNumber().optional(),
  outstandingAmountFrom: queryNumber().optional(),
  outstandingAmountTo: queryNumber().optional(),
  totalInvoicesFrom: queryNumber().int().optional(),
  totalInvoicesTo: queryNumber().int().optional(),
});
export type ContactListQuery = z.input<typeof contactListQuerySchema>;

export const CONTACT_LIST_PARAMS = {
  page: 'page',
  size: 'size',
  name: 'name',
  uuid: 'uuid',
  accountNumber: 'account-number',
  riskLevel: 'risk-level',
  workflowUuid: 'workflow-uuid',
  remindersEnabled: 'reminders-enabled',
  reminderStatus: 'reminder-status',
  totalAmountFrom: 'total-amount-from',
  totalAmountTo: 'total-amount-to',
  outstandingAmountFrom: 'outstanding-amount-from',
  outstandingAmountTo: 'outstanding-amount-to',
  totalInvoicesFrom: 'total-invoices-from',
  totalInvoicesTo: 'total-invoices-to',
} as const satisfies Record<keyof z.infer<typeof contactListQuerySchema>, string>;

export const pageSchema = <T extends z.ZodType>(item: T) =>
  z.looseObject({
    items: z.array(item),
    total: z.number().int().min(0),
    page: z.number().int().min(1),
    size: z.number().int().min(1),
    pages: z.number().int().min(0),
  });
export const contactPageSchema = pageSchema(contactSchema);

// ---------- invoices ----------
export const invoiceUpsertSchema = z.object({
  number: str255,
  date: isoDate,
  dueDate: isoDate,
  total: z.number(),
  contactUuid: uuid,
  outstandingAmount: z.number().optional(),
  uuid: uuid.optional(),
  // null clears the field of an invoice the request updates (docs/decisions).
  reference: str255.nullable().optional(),
  notes: str255.nullable().optional(),
  description: str255.nullable().optional(),
  purchaseOrder: str255.nullable().optional(),
  extPlatformId: z.string().optional(),
  remindersEnabled: z.boolean().optional(),
  customFields: customFields.optional(),
});

export const invoiceSchema = z.looseObject({
  number: z.string(),
  date: z.string(),
  dueDate: z.string(),
  total: z.number(),
  uuid,
  status: invoiceStatus,
  contact: shortContactSchema,
  createdAt: z.string(),
  reference: nullable(z.string()),
  notes: nullable(z.string()),
  description: nullable(z.string()),
  purchaseOrder: nullable(z.string()),
  extPlatformId: nullable(z.string()),
  totalPaid: nullable(z.number()),
  outstandingAmount: nullable(z.number()),
  remindersEnabled: nullable(z.boolean()),
  paidDate: nullable(z.string()),
  preDueEmails: nullable(z.number().int()),
  postDueEmails: nullable(z.number().int()),
  level: nullable(z.string()),
  risk: nullable(z.string()),
  attachment: nullable(z.boolean()),
  paymentInstructions: nullable(z.looseObject({})),
  currencyCode: nullable(z.string()),
  customFields: nullable(z.array(z.unknown())),
});

// ---------- payments ----------
export const paymentUpdateSchema = z.object({
  amount: z.number().optional(),
  date: isoDate.optional(),
  reference: z.string().optional(),
  notes: z.string().optional(),
});
export const paymentSchema = z.looseObject({
  amount: z.number(),
  date: z.string(),
  uuid,
  reference: nullable(z.string()),
  notes: nullable(z.string()),
  onlinePaymentId: nullable(z.number().int()),
  paymentType: nullable(z.string()),
});

// ---------- calls ----------
export const bulkCallContactSchema = z.object({
  numberToCall: z.string().min(1).max(100),
  firstName: z.string().nullable().optional(),
  lastName: z.string().nullable().optional(),
  metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  /** Only string values are supported by the service. */
  promptTags: z.record(z.string(), z.string()).nullable().optional(),
});
export const bulkCallSchema = z.object({
  contacts: z.array(bulkCallContactSchema),
  aiSettingsTemplateId: uuid.nullable().optional(),
  updateExisting: z.boolean().optional(),
  countryCode: z.string().regex(/^[A-Z]{2}$/).nullable().optional(),
  batchSize: z.number().int().min(10).max(1000).nullable().optional(),
});
/** Single call: `contactUuid` is the only field the description shows; others are not shown (docs/decisions). */
export const singleCallSchema = z.looseObject({ contactUuid: uuid });

// ---------- auth and errors ----------
export const tokenRequestSchema = z.object({ clientId: z.string().min(1), clientSecret: z.string().min(1) });
export const tokenResponseSchema = z.looseObject({ access_token: z.string().min(1) });

export const validationDetailSchema = z.object({
  loc: z.array(z.union([z.string(), z.number()])),
  msg: z.string(),
  type: z.string(),
});
export const validationErrorSchema = z.looseObject({ detail: z.array(validationDetailSchema) });

// ---------- types ----------
export type ContactCreate = z.input<typeof contactCreateSchema>;
export type ContactUpdate = z.input<typeof contactUpdateSchema>;
export type SecondaryContact = z.input<typeof secondaryContactSchema>;
export type SecondaryContactUpdate = z.input<typeof secondaryContactUpdateSchema>;
export type Contact = z.infer<typeof contactSchema>;
export type ContactPage = z.infer<typeof contactPageSchema>;
export type InvoiceUpsert = z.input<typeof invoiceUpsertSchema>;
export type Invoice = z.infer<typeof invoiceSchema>;
export type PaymentUpdate = z.input<typeof paymentUpdateSchema>;
export type Payment = z.infer<typeof paymentSchema>;
export type BulkCall = z.input<typeof bulkCallSchema>;
export type BulkCallContact = z.input<typeof bulkCallContactSchema>;
export type SingleCall = z.input<typeof singleCallSchema>;
export type ValidationDetail = z.infer<typeof validationDetailSchema>;

/**
 * zod issues as the service's 422 `detail`: `loc` starts with `body`, `query` or `path` (FastAPI's form),
 * `type` follows pydantic's names where one fits. The issues must come from `reportedIssues` (src/zod-issues.ts):
 * a missing value is told from a wrong one by the issue's input.
 */
export function toValidationDetail(issues: readonly z.core.$ZodIssue[], where: 'body' | 'query' | 'path', rename?: (key: PropertyKey) => string | number): ValidationDetail[] {
  return issues.map((issue) => ({
    loc: [where, ...issue.path.map((k) => (rename ? rename(k) : typeof k === 'number' ? k : String(k)))],
    msg: issue.message,
    type: issueType(issue),
  }));
}

function issueType(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'too_small':
      return issue.origin === 'string' ? 'string_too_short' : issue.origin === 'array' ? 'too_short' : 'greater_than_equal';
    case 'too_big':
      return issue.origin === 'string' ? 'string_too_long' : issue.origin === 'array' ? 'too_long' : 'less_than_equal';
    case 'invalid_type':
      return isMissing(issue) ? 'missing' : `${issue.expected}_type`;
    case 'invalid_format':
      return issue.format === 'regex' ? 'string_pattern_mismatch' : `${issue.format}_parsing`;
    case 'invalid_value':
      return 'enum';
    default:
      return issue.code;
  }
}
