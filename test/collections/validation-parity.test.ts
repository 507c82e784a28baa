/**
 * A request the service would 422 is refused locally with the same detail: each bad input goes through the
 * client (local ValidationError, nothing sent) and raw through fetch to the simulator (422), and the two
 * `detail`s (loc, msg, type) must agree.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/collections/errors.js';
import { validationErrorSchema, type BulkCall, type InvoiceUpsert, type ValidationDetail } from '../../src/collections/schemas.js';
import type { CollectionsClient } from '../../src/collections/client.js';
import { caught, count, useFixture, type Fixture } from './fixture.js';

let f!: Fixture;
/** Any well-formed uuid: these requests fail the schema before the service looks anything up. */
const contactUuid = randomUUID();
useFixture((x) => (f = x));

interface Case {
  name: string;
  route: string;
  method: 'GET' | 'POST';
  /** Path with query for GET, path for POST. */
  path: string;
  body?: unknown;
  viaClient: (c: CollectionsClient) => Promise<unknown>;
  loc: (string | number)[];
  /** The `type` and a part of `msg` both sides must give, when the case is about what they say. */
  says?: { type: string; msg: string };
}

const invoice = (over: Partial<InvoiceUpsert>): InvoiceUpsert => ({ number: 'INV-P', date: '2024-01-01', dueDate: '2024-01-31', total: 1, contactUuid, ...over });
const bulk = (over: Partial<BulkCall>): BulkCall => ({ contacts: [{ numberToCall: '+966500000001' }], ...over });

const cases = (): Case[] => [
  { name: 'over-long name', route: 'POST /contact', method: 'POST', path: '/contact', body: { name: 'x'.repeat(256) }, viaClient: (c) => c.createContact({ name: 'x'.repeat(256) }), loc: ['body', 'name'] },
  { name: 'bad email', route: 'POST /contact', method: 'POST', path: '/contact', body: { name: 'a', email: 'not-an-email' }, viaClient: (c) => c.createContact({ name: 'a', email: 'not-an-email' }), loc: ['body', 'email'] },
  { name: 'bad date', route: 'POST /invoice/create-update', method: 'POST', path: '/invoice/create-update', body: invoice({ date: '2024-02-30' }), viaClient: (c) => c.upsertInvoice(invoice({ date: '2024-02-30' })), loc: ['body', 'date'] },
  { name: 'over-long invoice notes', route: 'POST /invoice/create-update', method: 'POST', path: '/invoice/create-update', body: invoice({ notes: 'n'.repeat(256) }), viaClient: (c) => c.upsertInvoice(invoice({ notes: 'n'.repeat(256) })), loc: ['body', 'notes'], says: { type: 'string_too_long', msg: '<=255' } },
  { name: 'size 101', route: 'GET /contact', method: 'GET', path: '/contact?size=101', viaClient: (c) => c.listContacts({ size: 101 }), loc: ['query', 'size'] },
  { name: 'numberToCall too long', route: 'POST /ai/phone-calls/action/call-bulk', method: 'POST', path: '/ai/phone-calls/action/call-bulk', body: { contacts: [{ numberToCall: '1'.repeat(101) }] }, viaClient: (c) => c.bulkCall({ contacts: [{ numberToCall: '1'.repeat(101) }] }), loc: ['body', 'contacts', 0, 'numberToCall'] },
  { name: "countryCode 'sa'", route: 'POST /ai/phone-calls/action/call-bulk', method: 'POST', path: '/ai/phone-calls/action/call-bulk', body: bulk({ countryCode: 'sa' }), viaClient: (c) => c.bulkCall(bulk({ countryCode: 'sa' })), loc: ['body', 'countryCode'] },
  { name: 'batchSize 5', route: 'POST /ai/phone-calls/action/call-bulk', method: 'POST', path: '/ai/phone-calls/action/call-bulk', body: bulk({ batchSize: 5 }), viaClient: (c) => c.bulkCall(bulk({ batchSize: 5 })), loc: ['body', 'batchSize'] },
  // A value of the wrong type is not a missing one: both sides say what was expected and what came.
  { name: 'promptTags.amount a number', route: 'POST /ai/phone-calls/action/call-bulk', method: 'POST', path: '/ai/phone-calls/action/call-bulk', body: { contacts: [{ numberToCall: '+966500000001', promptTags: { amount: 5 } }] }, viaClient: (c) => c.bulkCall({ contacts: [{ numberToCall: '+966500000001', promptTags: { amount: 5 as unknown as string } }] }), loc: ['body', 'contacts', 0, 'promptTags', 'amount'], says: { type: 'string_type', msg: 'expected string, received number' } },
  { name: 'total-amount-from=abc', route: 'GET /contact', method: 'GET', path: '/contact?total-amount-from=abc', viaClient: (c) => c.listContacts({ totalAmountFrom: 'abc' }), loc: ['query', 'total-amount-from'], says: { type: 'number_type', msg: 'expected number, received string' } },
  { name: 'total a string', route: 'POST /invoice/create-update', method: 'POST', path: '/invoice/create-update', body: invoice({ total: 'abc' as unknown as number }), viaClient: (c) => c.upsertInvoice(invoice({ total: 'abc' as unknown as number })), loc: ['body', 'total'], says: { type: 'number_type', msg: 'expected number, received string' } },
  { name: 'number missing', route: 'POST /invoice/create-update', method: 'POST', path: '/invoice/create-update', body: { ...invoice({}), number: undefined }, viaClient: (c) => c.upsertInvoice({ ...invoice({}), number: undefined as unknown as string }), loc: ['body', 'number'], says: { type: 'missing', msg: 'expected string, received undefined' } },
  { name: "aiSettingsTemplateId 'x'", route: 'POST /ai/phone-calls/action/call-bulk', method: 'POST', path: '/ai/phone-calls/action/call-bulk', body: bulk({ aiSettingsTemplateId: 'x' }), viaClient: (c) => c.bulkCall(bulk({ aiSettingsTemplateId: 'x' })), loc: ['body', 'aiSettingsTemplateId'] },
];

async function raw(c: Case): Promise<{ status: number; detail: ValidationDetail[] }> {
  const lease = await f.tokens.acquire();
  const res = await fetch(f.sim.baseUrl + c.path, {
    method: c.method,
    headers: { authorization: `Bearer ${lease.token}`, 'content-type': 'application/json' },
    ...(c.body === undefined ? {} : { body: JSON.stringify(c.body) }),
  });
  const json: unknown = await res.json();
  return { status: res.status, detail: res.status === 422 ? validationErrorSchema.parse(json).detail : [] };
}

describe('local refusal matches the service 422', () => {
  it.each(cases().map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const before = count(f.sim, c.route);
    const err = await caught(c.viaClient(f.client));
    expect(err).toBeInstanceOf(ValidationError);
    const local = err as ValidationError;
    expect(local.local).toBe(true);
    expect(local.code).toBe('COLLECTIONS_REJECTED');
    expect(local.retryable).toBe(false);
    expect(local.detail.map((d) => d.loc)).toEqual([c.loc]);
    expect(count(f.sim, c.route)).toBe(before); // nothing sent

    const remote = await raw(c);
    expect(remote.status).toBe(422);
    expect(local.detail).toEqual(remote.detail);
    if (c.says) {
      expect(local.detail[0]?.type).toBe(c.says.type);
      expect(local.detail[0]?.msg).toContain(c.says.msg);
    }
  });
});
