/**
 * Response bodies, shaped as collections-api.md describes them: every request field returned (null when unset,
 * `customFields` [] and `hasErrors` false when unset, `remindersEnabled` true by default), plus uuid, role, risk,
 * and aggregates over the contact's invoices.
 *
 * Where the description is silent (Decisions): `risk` is LOW without overdue unpaid money, MEDIUM when the oldest
 * overdue unpaid invoice is 1-30 days past due, HIGH beyond; `paymentInstructions` (a uuid in requests) is answered
 * as an object with that uuid and null bank fields; `workflowUuid` is echoed and also answered as
 * `workflow: {uuid, name: null}`; `reminderStatus`, `reminderLabel`, `promiseToPay*` are always null.
 */
import { CONTACT_STRING_FIELDS, type Contact, type Invoice, type Payment } from '../collections/schemas.js';
import { daysBetween } from '../dates.js';
import { money, type ContactRec, type InvoiceRec, type PaymentRec } from './store.js';

type Risk = 'LOW' | 'MEDIUM' | 'HIGH';

/** Request fields answered as-is, or null when unset. */
const NULLABLE_FIELDS = [
  ...CONTACT_STRING_FIELDS,
  'email', 'emailTone', 'sendEmailNotif', 'sendEmailNotifLang', 'sendSmsNotif', 'sendSmsNotifLang',
  'extPlatformId', 'extCompanyId', 'errorDetail', 'workflowUuid', 'gender',
] as const;


export function invoiceLevel(rec: InvoiceRec, today: string): 'PAID' | 'OVER-DUE' | 'DUE' | 'UPCOMING' {
  if (rec.status === 'PAID') return 'PAID';
  const d = daysBetween(rec.fields.dueDate, today);
  return d > 0 ? 'OVER-DUE' : d === 0 ? 'DUE' : 'UPCOMING';
}

function invoiceRisk(rec: InvoiceRec, today: string): Risk {
  if (rec.status === 'PAID') return 'LOW';
  const d = daysBetween(rec.fields.dueDate, today);
  return d > 30 ? 'HIGH' : d > 0 ? 'MEDIUM' : 'LOW';
}

const RISK_ORDER: Record<Risk, number> = { LOW: 0, MEDIUM: 1, HIGH: 2 };

export interface Aggregates {
  totalAmount: number;
  totalPaid: number;
  outstandingAmount: number;
  totalInvoices: number;
  countUnpaidInvoices: number;
}

export function aggregates(rec: ContactRec): Aggregates {
  let totalAmount = 0;
  let outstandingAmount = 0;
  let countUnpaidInvoices = 0;
  for (const inv of rec.invoices) {
    totalAmount += inv.fields.total;
    outstandingAmount += inv.outstanding;
    if (inv.status === 'UNPAID') countUnpaidInvoices += 1;
  }
  return {
    totalAmount: money(totalAmount),
    totalPaid: money(totalAmount - outstandingAmount),
    outstandingAmount: money(outstandingAmount),
    totalInvoices: rec.invoices.size,
    countUnpaidInvoices,
  };
}

export function contactRisk(rec: ContactRec, today: string): Risk {
  let risk: Risk = 'LOW';
  for (const inv of rec.invoices) {
    const r = invoiceRisk(inv, today);
    if (RISK_ORDER[r] > RISK_ORDER[risk]) risk = r;
  }
  return risk;
}

export function shortContact(c: {
  uuid: string;
  name?: string | undefined;
  firstName?: string | undefined;
  lastName?: string | undefined;
  phoneNumber?: string | undefined;
  email?: string | undefined;
}): { uuid: string; name: string | null; firstName: string | null; lastName: string | null; phoneNumber: string | null; email: string | null } {
  return {
    uuid: c.uuid,
    name: c.name ?? null,
    firstName: c.firstName ?? null,
    lastName: c.lastName ?? null,
    phoneNumber: c.phoneNumber ?? null,
    email: c.email ?? null,
  };
}

export function renderContact(rec: ContactRec, today: string): Contact {
  const f = rec.fields as Record<string, unknown>;
  const out: Record<string, unknown> = { uuid: rec.uuid };
  for (const key of NULLABLE_FIELDS) out[key] = f[key] ?? null;
  const pi = rec.fields.paymentInstructions;
  const wf = rec.fields.workflowUuid;
  Object.assign(out, {
    remindersEnabled: rec.fields.remindersEnabled ?? true,
    hasErrors: rec.fields.hasErrors ?? false,
    customFields: rec.fields.customFields ?? [],
    secondaryContacts: rec.secondary.map(shortContact),
    paymentInstructions: pi === undefined ? null
      : { uuid: pi, bankName: null, iban: null, bankAddress: null, accountNumber: null, bankCompanyName: null, bankCompanyAddress: null },
    workflow: wf === undefined ? null : { uuid: wf, name: null },
    role: rec.role,
    risk: contactRisk(rec, today),
    ...aggregates(rec),
    promiseToPayDate: null,
    promiseToPaySwitchWorkflowUuid: null,
    reminderStatus: null,
    reminderLabel: null,
  });
  return out as Contact;
}

export function renderInvoice(rec: InvoiceRec, today: string): Invoice {
  const f = rec.fields;
  return {
    uuid: rec.uuid,
    number: f.number,
    date: f.date,
    dueDate: f.dueDate,
    total: f.total,
    status: rec.status,
    contact: shortContact({ uuid: rec.contact.uuid, ...rec.contact.fields }),
    createdAt: rec.createdAt,
    reference: f.reference ?? null,
    notes: f.notes ?? null,
    description: f.description ?? null,
    purchaseOrder: f.purchaseOrder ?? null,
    extPlatformId: f.extPlatformId ?? null,
    totalPaid: money(f.total - rec.outstanding),
    outstandingAmount: rec.outstanding,
    remindersEnabled: f.remindersEnabled ?? true,
    paidDate: rec.paidDate,
    preDueEmails: 0,
    postDueEmails: 0,
    level: invoiceLevel(rec, today),
    risk: invoiceRisk(rec, today),
    attachment: false,
    paymentInstructions: null,
    currencyCode: null,
    customFields: f.customFields ?? [],
  };
}

export function renderPayment(rec: PaymentRec): Payment {
  return {
    uuid: rec.uuid,
    amount: rec.amount,
    date: rec.date,
    reference: rec.reference,
    notes: rec.notes,
    onlinePaymentId: null,
    paymentType: rec.paymentType,
  };
}
