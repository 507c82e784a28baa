import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { api, jwtClaims, token, tokenAnswer, until } from './helpers.js';

describe('simulator: tokens', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({
      clients: [
        { clientId: 'acme', clientSecret: 'acme-secret' },
        { clientId: 'globex', clientSecret: 'globex-secret' },
      ],
    });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.setFaults({ latencyMs: 0, jitterMs: 0, script: [] });
    sim.setTokenLifetime(300_000);
    sim.resetCounters();
  });

  it('issues a JWT whose claims name the client, its generation and an exp matching the lifetime', async () => {
    sim.setTokenLifetime(120_000);
    const before = Date.now();
    const jwt = await token(sim, 'acme', 'acme-secret');
    const after = Date.now();
    const claims = jwtClaims(jwt);
    expect(claims['sub']).toBe('acme');
    expect(typeof claims['gen']).toBe('number');
    expect(claims['exp']).toBeGreaterThanOrEqual(Math.floor((before + 120_000) / 1000));
    expect(claims['exp']).toBeLessThanOrEqual(Math.floor((after + 120_000) / 1000));
    expect(JSON.parse(Buffer.from(jwt.split('.')[0]!, 'base64url').toString())).toMatchObject({ alg: 'HS256' });
    const res = await api(sim, 'GET', '/contact', { token: jwt });
    expect(res.status).toBe(200);
    expect(sim.counters().tokensIssued['acme']).toBe(1);
    expect(sim.counters().tokensIssuedTotal).toBe(1);
  });

  it('a new token supersedes every older token of the same client, not those of others', async () => {
    const first = await token(sim, 'acme', 'acme-secret');
    const second = await token(sim, 'acme', 'acme-secret');
    const other = await token(sim, 'globex', 'globex-secret');
    const third = await token(sim, 'acme', 'acme-secret');
    for (const old of [first, second]) {
      const res = await api(sim, 'GET', '/contact', { token: old });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ reason: 'superseded' });
    }
    expect((await api(sim, 'GET', '/contact', { token: third })).status).toBe(200);
    expect((await api(sim, 'GET', '/contact', { token: other })).status).toBe(200);
    expect(sim.counters().unauthorized).toEqual({ missing: 0, expired: 0, superseded: 2, invalid: 0 });
  });

  it('a token expires at exp (short lifetime)', async () => {
    sim.setTokenLifetime(1);
    const jwt = await token(sim, 'acme', 'acme-secret');
    await until(() => Date.now() >= (jwtClaims(jwt)['exp'] as number) * 1000, 'the token exp');
    const res = await api(sim, 'GET', '/contact', { token: jwt });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ reason: 'expired' });
    expect(sim.counters().unauthorized.expired).toBe(1);
  });

  it('answers 401 missing / invalid for no header, garbage, a forged signature and another scheme', async () => {
    const good = await token(sim, 'acme', 'acme-secret');
    const [h, p] = good.split('.') as [string, string, string];
    const forgedPayload = Buffer.from(JSON.stringify({ ...jwtClaims(good), sub: 'globex' })).toString('base64url');
    const missing = await api(sim, 'GET', '/contact');
    expect(missing.status).toBe(401);
    expect(missing.body).toMatchObject({ reason: 'missing' });
    for (const bad of ['garbage', `${h}.${p}.AAAA`, `${h}.${forgedPayload}.${good.split('.')[2]}`]) {
      const res = await api(sim, 'GET', '/contact', { token: bad });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ reason: 'invalid' });
    }
    expect(sim.counters().unauthorized).toEqual({ missing: 1, expired: 0, superseded: 0, invalid: 3 });
    expect(sim.counters().requests['GET /contact']?.['401']).toBe(4);
  });

  it('refuses wrong or unknown credentials with 401 invalid_credentials and a bad body with 422', async () => {
    for (const [id, secret] of [['acme', 'wrong'], ['nobody', 'acme-secret'], ['acme', 'globex-secret']] as const) {
      const res = await tokenAnswer(sim, id, secret);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ detail: 'Invalid client credentials', reason: 'invalid_credentials' });
    }
    const bad = await tokenAnswer(sim, '', 'x');
    expect(bad.status).toBe(422);
    expect(bad.body).toMatchObject({ detail: [{ loc: ['body', 'clientId'] }] });
    expect(sim.counters().tokensIssuedTotal).toBe(0);
  });

  it('setClient adds a client and changes a secret', async () => {
    sim.setClient('initech', 'i-secret');
    expect((await tokenAnswer(sim, 'initech', 'i-secret')).status).toBe(200);
    sim.setClient('initech', 'rotated');
    expect((await tokenAnswer(sim, 'initech', 'i-secret')).status).toBe(401);
    expect((await tokenAnswer(sim, 'initech', 'rotated')).status).toBe(200);
  });

  it('isolates clients: one never sees nor changes the data of another', async () => {
    const a = await token(sim, 'acme', 'acme-secret');
    const g = await token(sim, 'globex', 'globex-secret');
    const created = await api(sim, 'POST', '/contact', { token: a, body: { name: 'Only Acme Ltd' } });
    expect(created.status).toBe(200);
    const uuid = (created.body as { uuid: string }).uuid;
    const seenByGlobex = await api(sim, 'GET', '/contact', { token: g, query: { name: 'Only Acme' } });
    expect(seenByGlobex.body).toMatchObject({ items: [], total: 0 });
    expect((await api(sim, 'GET', '/contact', { token: g, query: { uuid } })).body).toMatchObject({ total: 0 });
    const put = await api(sim, 'PUT', '/contact', { token: g, body: { uuid, name: 'Hijacked' } });
    expect(put.status).toBe(404);
    expect(put.body).toEqual({ detail: 'Contact not found' });
    const invoice = await api(sim, 'POST', '/invoice/create-update', {
      token: g,
      body: { number: 'X-1', date: '2024-01-01', dueDate: '2024-02-01', total: 10, contactUuid: uuid },
    });
    expect(invoice.status).toBe(404);
    expect(sim.data('acme').contacts.map((c) => c.name)).toContain('Only Acme Ltd');
    expect(sim.data('globex').contacts.map((c) => c.name)).not.toContain('Hijacked');
  });

  it('counts a request superseded while being processed (admitted on arrival, so it still succeeds)', async () => {
    const old = await token(sim, 'acme', 'acme-secret');
    sim.setFaults({ script: [], latencyMs: 400 });
    sim.resetCounters();
    const slow = api(sim, 'POST', '/contact', { token: old, body: { name: 'Slow Write' } });
    await until(() => (sim.counters().maxConcurrencyByClient['acme'] ?? 0) >= 1, 'the slow request in flight');
    sim.setFaults({ latencyMs: 0 });
    const fresh = await token(sim, 'acme', 'acme-secret');
    await token(sim, 'acme', 'acme-secret'); // a second rotation while it is still in flight: counted once
    const done = await slow;
    expect(done.status).toBe(200);
    const c = sim.counters();
    expect(c.supersededInFlight).toBe(1);
    expect(c.tokensIssued['acme']).toBe(2);
    expect(fresh).not.toBe(old);
  });

  it('does not count requests that finished before the rotation nor those of another client', async () => {
    const a = await token(sim, 'acme', 'acme-secret');
    const g = await token(sim, 'globex', 'globex-secret');
    expect((await api(sim, 'GET', '/contact', { token: a })).status).toBe(200);
    sim.setFaults({ latencyMs: 400 });
    const slowGlobex = api(sim, 'GET', '/contact', { token: g });
    await until(() => (sim.counters().maxConcurrencyByClient['globex'] ?? 0) >= 1, 'globex in flight');
    sim.setFaults({ latencyMs: 0 });
    await token(sim, 'acme', 'acme-secret');
    expect((await slowGlobex).status).toBe(200);
    expect(sim.counters().supersededInFlight).toBe(0);
  });
});
