import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseClientsArg, startSimulator, type Simulator, type SimulatorCounters, type SimulatorData } from '../../src/simulator/index.js';
import { admin, api, detail, jwtClaims, token, tokenAnswer } from './helpers.js';

describe('simulator: admin endpoints and start-up', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ clients: parseClientsArg('acme:a-secret,globex:g:colon'), tokenLifetimeMs: 60_000 });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('parses --clients pairs (secret after the first colon) and refuses malformed ones', async () => {
    expect(parseClientsArg(' acme:a-secret , globex:g:colon ')).toEqual([
      { clientId: 'acme', clientSecret: 'a-secret' },
      { clientId: 'globex', clientSecret: 'g:colon' },
    ]);
    for (const bad of ['', 'acme', ':secret', 'acme:', 'a:b,,c']) expect(() => parseClientsArg(bad)).toThrow(/id:secret/);
    expect((await tokenAnswer(sim, 'globex', 'g:colon')).status).toBe(200);
    expect(sim.baseUrl).toBe(`${sim.origin}/api-service/v1`);
    expect(sim.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('adds clients, changes the token lifetime, seeds contacts, payments and templates over HTTP', async () => {
    expect((await admin(sim, 'POST', '/clients', { body: { clientId: 'initech', clientSecret: 'i' } })).status).toBe(200);
    expect((await admin(sim, 'POST', '/token-lifetime', { body: { ms: 90_000 } })).status).toBe(200);
    const before = Date.now();
    const tok = await token(sim, 'initech', 'i');
    expect(jwtClaims(tok)['exp']).toBeGreaterThanOrEqual(Math.floor((before + 90_000) / 1000));

    const seeded = await admin(sim, 'POST', '/contacts', { body: { clientId: 'initech', body: { name: 'Seeded Co', extPlatformId: 'p-1' } } });
    expect(seeded.status).toBe(200);
    const contactUuid = (seeded.body as { uuid: string }).uuid;
    const inv = await api(sim, 'POST', '/invoice/create-update', {
      token: tok,
      body: { number: 'S-1', date: '2024-01-01', dueDate: '2024-02-01', total: 50, contactUuid },
    });
    const invoiceUuid = (inv.body as { uuid: string }).uuid;
    const pay = await admin(sim, 'POST', '/payments', { body: { clientId: 'initech', invoiceUuid, amount: 50, date: '2024-01-15', paymentType: 'CREDIT_MEMO' } });
    expect(pay.status).toBe(200);
    expect(pay.body).toMatchObject({ amount: 50, paymentType: 'CREDIT_MEMO' });
    const missingInvoice = await admin(sim, 'POST', '/payments', { body: { clientId: 'initech', invoiceUuid: randomUUID(), amount: 1, date: '2024-01-15' } });
    expect(missingInvoice.status).toBe(404);

    const tpl = randomUUID();
    expect((await admin(sim, 'POST', '/templates', { body: { uuid: tpl, prompt: 'Hi {{who}}' } })).status).toBe(200);
    const call = await api(sim, 'POST', '/ai/phone-calls/action/call-bulk', {
      token: tok,
      body: { aiSettingsTemplateId: tpl, contacts: [{ numberToCall: '123', promptTags: { who: 'Kim' } }] },
    });
    expect(call.status).toBe(201);

    const data = await admin(sim, 'GET', '/data', { query: { clientId: 'initech' } });
    expect(data.status).toBe(200);
    const d = data.body as SimulatorData;
    expect(d.contacts.map((c) => c.name)).toEqual(['Seeded Co', '123']);
    expect(d.invoices[0]).toMatchObject({ status: 'PAID', outstandingAmount: 0 });
    expect(d.payments[0]).toMatchObject({ invoiceUuid, amount: 50 });
    expect(d.calls[0]).toMatchObject({ prompt: 'Hi Kim' });
    expect((await admin(sim, 'GET', '/data', { query: { clientId: 'nobody' } })).body).toEqual({ contacts: [], invoices: [], payments: [], calls: [] });
    expect(detail(await admin(sim, 'GET', '/data'))[0]?.loc).toEqual(['query', 'clientId']);
  });

  it('sets faults over HTTP (validated) and reads and resets counters; admin calls are neither faulted nor counted', async () => {
    expect((await admin(sim, 'POST', '/reset-counters')).status).toBe(200);
    const bad = await admin(sim, 'POST', '/faults', { body: { error5xxRate: 2 } });
    expect(bad.status).toBe(422);
    expect(detail(bad)[0]?.loc).toEqual(['body', 'error5xxRate']);
    expect((await admin(sim, 'POST', '/faults', { body: { script: [{ fault: '503', count: 1 }] } })).status).toBe(200);
    expect((await admin(sim, 'GET', '/counters')).status).toBe(200);
    const tok = await tokenAnswer(sim, 'acme', 'a-secret');
    expect(tok.status).toBe(503);
    expect((await tokenAnswer(sim, 'acme', 'a-secret')).status).toBe(200);
    const counters = (await admin(sim, 'GET', '/counters')).body as SimulatorCounters;
    expect(counters.requests['POST /auth/v1/api-key/auth']).toMatchObject({ '503': 1, '200': 1 });
    expect(Object.keys(counters.requests).some((r) => r.includes('__sim'))).toBe(false);
    expect((await admin(sim, 'POST', '/reset-counters')).status).toBe(200);
    const zero = (await admin(sim, 'GET', '/counters')).body as SimulatorCounters;
    expect(zero).toMatchObject({ requests: {}, tokensIssuedTotal: 0, writesCommitted: 0, faultsInjected: {} });
    expect((await admin(sim, 'GET', '/nothing')).status).toBe(404);
  });

  it('close() ends keep-alive connections and is idempotent', async () => {
    const other = await startSimulator({ clients: [{ clientId: 'x', clientSecret: 'y' }] });
    const tok = await token(other, 'x', 'y');
    expect((await api(other, 'GET', '/contact', { token: tok })).status).toBe(200);
    await Promise.all([other.close(), other.close()]);
    await expect(api(other, 'GET', '/contact', { token: tok })).rejects.toThrow();
  });
});
