/**
 * The retry rules, with the simulator's deterministic `script` faults: transient and 429 retried (Retry-After
 * honoured), 422/404 not, ambiguous failures retried only for idempotent operations.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { AmbiguousError, RateLimitedError, TransientError, errorCode } from '../../src/collections/errors.js';
import { CollectionsClient } from '../../src/collections/client.js';
import { FixedTokenProvider } from '../../src/collections/static-token-provider.js';
import { caught, CLIENT_ID, count, useFixture, type Fixture } from './fixture.js';

let f!: Fixture;
let contactUuid: string;
useFixture((x) => (f = x));
beforeAll(async () => {
  contactUuid = (await f.client.createContact({ name: 'Retry owner' })).uuid;
});

const uniq = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;
const contactsNamed = (name: string) => f.sim.data(CLIENT_ID).contacts.filter((c) => c.name === name);

describe('transient and rate-limited answers are retried', () => {
  it('a 503 then 200 is retried: two requests', async () => {
    f.sim.setFaults({ script: [{ route: 'GET /contact', fault: '503', count: 1 }] });
    const page = await f.client.listContacts({ size: 1 });
    expect(page.page).toBe(1);
    expect(count(f.sim, 'GET /contact', '503')).toBe(1);
    expect(count(f.sim, 'GET /contact', '200')).toBe(1);
    expect(f.events.map((e) => e.status)).toEqual([503, 200]);
  });

  it('a 503 on a create is retried too (answered before processing): one contact', async () => {
    const name = uniq('C503');
    f.sim.setFaults({ script: [{ route: 'POST /contact', fault: '503', count: 1 }] });
    await f.client.createContact({ name });
    expect(count(f.sim, 'POST /contact')).toBe(2);
    expect(contactsNamed(name)).toHaveLength(1);
  });

  it('a 500 on a create is ambiguous (may have failed halfway) and not retried', async () => {
    f.sim.setFaults({ script: [{ route: 'POST /contact', fault: '500', count: 1 }] });
    const err = await caught(f.client.createContact({ name: uniq('C500') }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect((err as AmbiguousError).status).toBe(500);
    expect(count(f.sim, 'POST /contact')).toBe(1);
  });

  it('transient failures stop after `retries` with a TransientError', async () => {
    const c = f.makeClient({ retries: 2 });
    f.sim.setFaults({ script: [{ route: 'GET /contact', fault: '503', count: 10 }] });
    const err = await caught(c.listContacts());
    expect(err).toBeInstanceOf(TransientError);
    expect((err as TransientError).retryable).toBe(true);
    expect(count(f.sim, 'GET /contact', '503')).toBe(3);
  });

  it('a 429 with Retry-After 1 is retried after waiting for it', async () => {
    f.sim.setFaults({ script: [{ route: 'GET /contact', fault: '429', count: 1, retryAfterS: 1 }] });
    const started = performance.now();
    await f.client.listContacts({ size: 1 });
    const elapsed = performance.now() - started;
    expect(count(f.sim, 'GET /contact', '429')).toBe(1);
    expect(count(f.sim, 'GET /contact', '200')).toBe(1);
    expect(elapsed).toBeGreaterThanOrEqual(950); // behaviour: the wait honoured Retry-After (not a speed check)
  });

  it('a Retry-After beyond the time budget is not slept: RateLimitedError with retryAfterMs', async () => {
    const c = f.makeClient({ timeouts: { requestMs: 1_000 } });
    f.sim.setFaults({ script: [{ route: 'GET /contact', fault: '429', count: 1, retryAfterS: 5 }] });
    const err = await caught(c.listContacts());
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBe(5_000);
    expect(count(f.sim, 'GET /contact')).toBe(1);
  });

  it('a refused connection is transient and retried', async () => {
    const port = await closedPort();
    const attempts: number[] = [];
    const c = new CollectionsClient({ baseUrl: `http://127.0.0.1:${port}/api-service/v1`, tokens: new FixedTokenProvider('t'), retries: 2, backoff: { baseMs: 5, maxMs: 10 }, onRequest: (e) => attempts.push(e.attempt) });
    const err = await caught(c.createContact({ name: 'never sent' }));
    expect(err).toBeInstanceOf(TransientError);
    expect(JSON.stringify(err)).toContain('ECONNREFUSED');
    expect(attempts).toEqual([1, 2, 3]); // even a create: nothing reached the service
    await c.close();
  });
});

describe('rejections are not retried', () => {
  it('a 404 is sent once', async () => {
    await caught(f.client.updatePayment(randomUUID(), { amount: 1 }));
    expect(count(f.sim, 'PUT /invoice/payment/{uuid}')).toBe(1);
  });
});

describe('ambiguous failures', () => {
  it('a dropped createContact is not retried: AmbiguousError while the contact exists', async () => {
    const name = uniq('Dropped');
    f.sim.setFaults({ script: [{ route: 'POST /contact', fault: 'drop', count: 1 }] });
    const err = await caught(f.client.createContact({ name }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect(errorCode(err)).toBe('COLLECTIONS_AMBIGUOUS');
    expect((err as AmbiguousError).retryable).toBe(false);
    expect(count(f.sim, 'POST /contact')).toBe(1);
    expect(contactsNamed(name)).toHaveLength(1);
  });

  it('a reset createContact is AmbiguousError too: the client cannot tell it from a drop (nothing was created)', async () => {
    const name = uniq('Reset');
    f.sim.setFaults({ script: [{ route: 'POST /contact', fault: 'reset', count: 1 }] });
    const err = await caught(f.client.createContact({ name }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect(count(f.sim, 'POST /contact')).toBe(1);
    expect(contactsNamed(name)).toHaveLength(0);
  });

  it('a dropped bulk call is not retried', async () => {
    f.sim.setFaults({ script: [{ route: 'POST /ai/phone-calls/action/call-bulk', fault: 'drop', count: 1 }] });
    const err = await caught(f.client.bulkCall({ contacts: [{ numberToCall: '+966500000099' }] }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect(count(f.sim, 'POST /ai/phone-calls/action/call-bulk')).toBe(1);
    expect(f.sim.data(CLIENT_ID).calls.filter((c) => c.numberToCall === '+966500000099')).toHaveLength(1);
  });

  it('a dropped upsertInvoice is retried and leaves exactly one invoice', async () => {
    const number = uniq('INV');
    f.sim.setFaults({ script: [{ route: 'POST /invoice/create-update', fault: 'drop', count: 1 }] });
    const inv = await f.client.upsertInvoice({ number, date: '2024-03-01', dueDate: '2024-03-31', total: 50, contactUuid, extPlatformId: number });
    expect(inv.number).toBe(number);
    expect(count(f.sim, 'POST /invoice/create-update', 'drop')).toBe(1);
    expect(count(f.sim, 'POST /invoice/create-update', '200')).toBe(1);
    expect(f.sim.data(CLIENT_ID).invoices.filter((i) => i.number === number)).toHaveLength(1);
  });

  it('an idempotent update that keeps dropping ends in a retryable AmbiguousError', async () => {
    const c = f.makeClient({ retries: 2 });
    f.sim.setFaults({ script: [{ route: 'PUT /contact', fault: 'drop', count: 10 }] });
    const err = await caught(c.updateContact({ uuid: contactUuid, city: 'Jeddah' }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect((err as AmbiguousError).retryable).toBe(true);
    expect(count(f.sim, 'PUT /contact', 'drop')).toBe(3);
  });

  it('no answer within the time budget is ambiguous (our own timeout)', async () => {
    const c = f.makeClient({ timeouts: { requestMs: 300 } });
    f.sim.setFaults({ latencyMs: 1_000 });
    const err = await caught(c.createContact({ name: uniq('Slow') }));
    expect(err).toBeInstanceOf(AmbiguousError);
    expect((err as AmbiguousError).message).toContain('no answer within');
  });

  it('a headers timeout is ambiguous', async () => {
    const c = f.makeClient({ timeouts: { headersMs: 200 }, retries: 0 });
    // undici's headers timeout runs on its coarse timers (a tick every ~500 ms): a 200 ms timeout fires after
    // 200-1,200 ms, so the answer comes well after that (at 1,000 ms it sometimes won the race on a loaded machine).
    f.sim.setFaults({ latencyMs: 4_000 });
    const err = await caught(c.listContacts());
    expect(err).toBeInstanceOf(AmbiguousError);
    expect(JSON.stringify(err)).toContain('UND_ERR_HEADERS_TIMEOUT');
  });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const addr = srv.address();
  await new Promise<void>((r) => srv.close(() => r()));
  if (addr === null || typeof addr === 'string') throw new Error('no port');
  return addr.port;
}
