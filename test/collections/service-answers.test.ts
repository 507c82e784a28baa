/**
 * Answers the simulator never gives (a service 422 on a request that passed local checks, bodies that break
 * the contract, odd statuses, an HTTP-date Retry-After), from a small real HTTP server on 127.0.0.1:0.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CollectionsClient } from '../../src/collections/client.js';
import { AmbiguousError, AuthError, BadResponseError, RateLimitedError, TransientError, ValidationError, errorCode } from '../../src/collections/errors.js';
import { FixedTokenProvider } from '../../src/collections/static-token-provider.js';
import type { CollectionsError } from '../../src/collections/errors.js';
import { caught } from './util.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let handlers: Handler[] = [];
let hits = 0;
let client: CollectionsClient;

const CONTACT_UUID = '3f1c2a4e-8b7d-4c1e-9a2b-5d6e7f8a9b0c';
const reply = (status: number, body: unknown, headers: Record<string, string> = {}): Handler => (_req, res) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

beforeAll(async () => {
  server = createServer((req, res) => {
    hits += 1;
    req.resume();
    req.on('end', () => (handlers.shift() ?? reply(500, { detail: 'no handler' }))(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  client = new CollectionsClient({ baseUrl: `http://127.0.0.1:${addr.port}/api-service/v1`, tokens: new FixedTokenProvider('t0'), backoff: { baseMs: 5, maxMs: 10 } });
});
afterAll(async () => {
  await client.close();
  await new Promise<void>((r) => server.close(() => r()));
});
beforeEach(() => {
  handlers = [];
  hits = 0;
});

describe('service answers', () => {
  it('a 422 from the service is a ValidationError(local: false) with its detail, not retried', async () => {
    const detail = [{ loc: ['body', 'contactUuid'], msg: 'Contact does not exist', type: 'value_error' }];
    handlers = [reply(422, { detail })];
    const err = await caught(client.upsertInvoice({ number: 'N', date: '2024-01-01', dueDate: '2024-01-02', total: 1, contactUuid: CONTACT_UUID }));
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).local).toBe(false);
    expect((err as ValidationError).detail).toEqual(detail);
    expect((err as ValidationError).status).toBe(422);
    expect(hits).toBe(1);
  });

  it('a success body that breaks the contract is a BadResponseError with the issues', async () => {
    handlers = [reply(200, { name: 'no uuid here' })];
    const err = await caught(client.createContact({ name: 'x' }));
    expect(err).toBeInstanceOf(BadResponseError);
    expect(errorCode(err)).toBe('COLLECTIONS_BAD_RESPONSE');
    expect((err as BadResponseError).issues.map((i) => i.path)).toContainEqual(['uuid']);
    expect(hits).toBe(1);
  });

  it('a success body that is not JSON is a BadResponseError', async () => {
    handlers = [reply(200, '<html>proxy</html>')];
    const err = await caught(client.listContacts());
    expect(err).toBeInstanceOf(BadResponseError);
    expect((err as BadResponseError).body).toBe('<html>proxy</html>');
  });

  it('unknown response fields are kept (loose) and nulls accepted', async () => {
    handlers = [reply(200, { uuid: CONTACT_UUID, name: 'x', city: null, brandNewField: 7 })];
    const c = await client.createContact({ name: 'x' });
    expect(c.uuid).toBe(CONTACT_UUID);
    expect(c.city).toBeNull();
    expect(c['brandNewField']).toBe(7);
  });

  it('another 4xx is COLLECTIONS_HTTP, not retried', async () => {
    handlers = [reply(409, { detail: 'conflict' })];
    const err = await caught(client.updateContact({ uuid: CONTACT_UUID, name: 'x' }));
    expect(errorCode(err)).toBe('COLLECTIONS_HTTP');
    expect((err as CollectionsError).status).toBe(409);
    expect(hits).toBe(1);
  });

  it('a Retry-After HTTP-date is read', async () => {
    const at = new Date(Date.now() + 60_000).toUTCString();
    handlers = [reply(429, { detail: 'slow down' }, { 'retry-after': at })];
    const err = await caught(client.listContacts());
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBeGreaterThan(50_000);
    expect((err as RateLimitedError).retryAfterMs).toBeLessThanOrEqual(60_000);
  });

  it('a 502 on a call is transient and retried; a 500 on a call is ambiguous and not', async () => {
    handlers = [reply(502, 'bad gateway'), reply(201, { ok: true })];
    const r = await client.bulkCall({ contacts: [{ numberToCall: '1' }] });
    expect(r).toEqual({ status: 201, body: { ok: true } });
    expect(hits).toBe(2);
    hits = 0;
    handlers = [reply(500, { detail: 'boom' })];
    const err = await caught(client.call({ contactUuid: CONTACT_UUID }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect(hits).toBe(1);
  });

  it('a 500 on an idempotent operation is transient and retried', async () => {
    handlers = [reply(500, { detail: 'boom' }), reply(200, { uuid: CONTACT_UUID, amount: 1, date: '2024-01-01' })];
    const p = await client.updatePayment(CONTACT_UUID, { amount: 1 });
    expect(p.amount).toBe(1);
    expect(hits).toBe(2);
    handlers = [reply(503, 'x'), reply(503, 'x'), reply(503, 'x'), reply(503, 'x'), reply(503, 'x')];
    const err = await caught(client.updatePayment(CONTACT_UUID, { amount: 1 }));
    expect(err).toBeInstanceOf(TransientError);
  });

  it.each([
    ['missing', 'AUTH_MISSING', false, 2],
    ['expired', 'AUTH_EXPIRED', true, 8],
    ['superseded', 'AUTH_SUPERSEDED', true, 2],
    ['gibberish', 'AUTH_INVALID', false, 2],
  ] as const)('a 401 with reason %s that persists is %s after %i re-sends', async (reason, code, retryable, resends) => {
    // `expired` is re-sent more often (the service refused before doing anything; a stalled process can see
    // several tokens expire on the way), still within the request's deadline.
    handlers = Array.from({ length: resends + 1 }, () => reply(401, { detail: 'no', reason }));
    const err = await caught(client.listContacts());
    expect(err).toBeInstanceOf(AuthError);
    expect(errorCode(err)).toBe(code);
    expect((err as AuthError).retryable).toBe(retryable);
    expect(hits).toBe(resends + 1);
  });

  it('an error body holding a token is scrubbed', async () => {
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXNpZw';
    handlers = [reply(418, { detail: `bad token Bearer ${jwt}`, access_token: 'plain-token-value' })];
    const err = await caught(client.listContacts());
    const text = JSON.stringify(err);
    expect(text).not.toContain(jwt);
    expect(text).not.toContain('plain-token-value');
    expect(text).toContain('[redacted]');
  });
});
