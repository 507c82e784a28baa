/** POST /contact, PUT /contact, GET /contact (list with every filter of the description, in creation order). */
import type { z } from 'zod';
import {
  CONTACT_LIST_PARAMS,
  contactCreateSchema,
  contactListQuerySchema,
  contactUpdateSchema,
} from '../../collections/schemas.js';
import { parseJsonBody, validate, type Reply } from '../http.js';
import { aggregates, contactRisk, renderContact, type Aggregates } from '../render.js';
import type { ContactRec } from '../store.js';
import type { Handler } from './context.js';

type ListQuery = z.output<typeof contactListQuerySchema>;
type CamelParam = keyof typeof CONTACT_LIST_PARAMS;

const CAMEL_OF = new Map<string, CamelParam>(
  Object.entries(CONTACT_LIST_PARAMS).map(([camel, kebab]) => [kebab, camel as CamelParam]),
);
const kebab = (key: PropertyKey): string | number =>
  typeof key === 'number' ? key : (CONTACT_LIST_PARAMS[String(key) as CamelParam] ?? String(key));

export const createContact: Handler = ({ ctx, clientId, body }) => {
  const parsed = validate(contactCreateSchema, parseJsonBody(body), 'body');
  const rec = ctx.store(clientId).createContact(parsed);
  return { status: 200, body: renderContact(rec, ctx.today()) };
};

export const updateContact: Handler = ({ ctx, clientId, body }) => {
  const parsed = validate(contactUpdateSchema, parseJsonBody(body), 'body');
  const rec = ctx.store(clientId).updateContact(parsed);
  return { status: 200, body: renderContact(rec, ctx.today()) };
};

/** Query parameters by their kebab-case names (unknown ones ignored; the first of repeated ones wins). */
function queryObject(query: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of query) {
    const camel = CAMEL_OF.get(k);
    if (camel !== undefined && !(camel in out)) out[camel] = v;
  }
  return out;
}

function within(value: number, from: number | undefined, to: number | undefined): boolean {
  return (from === undefined || value >= from) && (to === undefined || value <= to);
}

function matcher(q: ListQuery, today: string): ((rec: ContactRec) => boolean) | null {
  const tests: Array<(rec: ContactRec) => boolean> = [];
  if (q.name !== undefined) {
    const needle = q.name.toLowerCase();
    tests.push((r) => r.nameLower.includes(needle));
  }
  if (q.uuid !== undefined) {
    const id = q.uuid.toLowerCase();
    tests.push((r) => r.uuid === id);
  }
  if (q.accountNumber !== undefined) tests.push((r) => r.fields.accountNumber === q.accountNumber);
  if (q.riskLevel !== undefined) {
    const level = q.riskLevel.toUpperCase();
    tests.push((r) => contactRisk(r, today) === level);
  }
  if (q.workflowUuid !== undefined) {
    const id = q.workflowUuid.toLowerCase();
    tests.push((r) => r.fields.workflowUuid?.toLowerCase() === id);
  }
  if (q.remindersEnabled !== undefined) tests.push((r) => (r.fields.remindersEnabled ?? true) === q.remindersEnabled);
  // reminderStatus is never set by the simulator (always null), so a reminder-status filter matches nothing.
  if (q.reminderStatus !== undefined) tests.push(() => false);
  const amountFilters = [q.totalAmountFrom, q.totalAmountTo, q.outstandingAmountFrom, q.outstandingAmountTo, q.totalInvoicesFrom, q.totalInvoicesTo];
  if (amountFilters.some((v) => v !== undefined)) {
    tests.push((r) => {
      const a: Aggregates = aggregates(r);
      return within(a.totalAmount, q.totalAmountFrom, q.totalAmountTo) &&
        within(a.outstandingAmount, q.outstandingAmountFrom, q.outstandingAmountTo) &&
        within(a.totalInvoices, q.totalInvoicesFrom, q.totalInvoicesTo);
    });
  }
  if (tests.length === 0) return null;
  return (rec) => tests.every((t) => t(rec));
}

export const listContacts: Handler = ({ ctx, clientId, query }): Reply => {
  const q = validate(contactListQuerySchema, queryObject(query), 'query', kebab);
  const page = q.page ?? 1;
  const size = q.size ?? 50;
  const store = ctx.store(clientId);
  const today = ctx.today();
  const test = matcher(q, today);
  let matched: readonly ContactRec[];
  if (test === null) matched = store.contactList;
  else if (q.uuid !== undefined) {
    const one = store.contacts.get(q.uuid.toLowerCase());
    matched = one && test(one) ? [one] : [];
  } else matched = store.contactList.filter(test);
  const start = (page - 1) * size;
  const items = start < matched.length ? matched.slice(start, start + size).map((r) => renderContact(r, today)) : [];
  return { status: 200, body: { items, total: matched.length, page, size, pages: Math.ceil(matched.length / size) } };
};
