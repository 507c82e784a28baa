/** The API routes (under /api-service/v1), their counter names and whether they write. */
import { callBulk, callSingle } from './calls.js';
import type { Handler } from './context.js';
import { createContact, listContacts, updateContact } from './contacts.js';
import { updatePayment, upsertInvoice } from './invoices.js';

export const API_PREFIX = '/api-service/v1';
export const TOKEN_PATH = '/auth/v1/api-key/auth';
export const TOKEN_ROUTE = `POST ${TOKEN_PATH}`;

export interface ApiRoute {
  /** Counter and script name, e.g. 'PUT /invoice/payment/{uuid}'. */
  route: string;
  handler: Handler;
  /** Counts in writesCommitted when it succeeds. */
  write: boolean;
}

interface PathEntry {
  match: (path: string) => { uuid?: string } | null;
  methods: Record<string, ApiRoute>;
}

const exact = (p: string) => (path: string) => (path === p ? {} : null);
const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};
const PAYMENT = /^\/invoice\/payment\/([^/]+)$/;

const PATHS: PathEntry[] = [
  {
    match: exact('/contact'),
    methods: {
      POST: { route: 'POST /contact', handler: createContact, write: true },
      PUT: { route: 'PUT /contact', handler: updateContact, write: true },
      GET: { route: 'GET /contact', handler: listContacts, write: false },
    },
  },
  {
    match: exact('/invoice/create-update'),
    methods: { POST: { route: 'POST /invoice/create-update', handler: upsertInvoice, write: true } },
  },
  {
    match: (path) => {
      const m = PAYMENT.exec(path);
      return m?.[1] === undefined ? null : { uuid: decode(m[1]) };
    },
    methods: { PUT: { route: 'PUT /invoice/payment/{uuid}', handler: updatePayment, write: true } },
  },
  {
    match: exact('/ai/phone-calls/action/call-bulk'),
    methods: { POST: { route: 'POST /ai/phone-calls/action/call-bulk', handler: callBulk, write: true } },
  },
  {
    match: exact('/ai/phone-calls/action/call'),
    methods: { POST: { route: 'POST /ai/phone-calls/action/call', handler: callSingle, write: true } },
  },
];

/** Every route name the counters and the fault script use. */
export const ROUTES: readonly string[] = [TOKEN_ROUTE, ...PATHS.flatMap((p) => Object.values(p.methods).map((r) => r.route))];

export type ApiMatch =
  | { kind: 'route'; api: ApiRoute; params: { uuid?: string } }
  | { kind: 'method-not-allowed'; allow: string }
  | { kind: 'not-found' };

/** `path` is relative to API_PREFIX. */
export function matchApi(method: string, path: string): ApiMatch {
  for (const entry of PATHS) {
    const params = entry.match(path);
    if (!params) continue;
    const api = entry.methods[method];
    return api ? { kind: 'route', api, params } : { kind: 'method-not-allowed', allow: Object.keys(entry.methods).join(', ') };
  }
  return { kind: 'not-found' };
}
